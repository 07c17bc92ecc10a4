"""When the replica does not fit: FSDP2 ``fully_shard`` beside DDP and its knobs (chapter 08).

Every rank runs :func:`run_variants`; launch it under torchrun through the family's entry point
(from a notebook: :func:`tricks_helpers.ddp.run_torchrun`)::

    torchrun --standalone --nproc-per-node 2 -m tricks_helpers.ddp shard --out DIR \\
        --variant ddp --variant fsdp --variant static_graph

Every variant (a key of :data:`SHARD_VARIANTS`) trains the same MLP (:func:`make_mlp`, seeded
alike on every rank) with Adam on the same data (each rank its slice of every global batch), in
``rounds`` timed rounds of ``steps`` steps, interleaved with the other variants' rounds
(:func:`run_variants`), and writes ``<variant>.rank<r>.json``: the losses (this rank's), the
bytes of its parameters and of its optimizer state (local shards under FSDP), the buckets DDP
all-reduced (counted by a communication hook that wraps the default one; 0 under FSDP), the
distinct storages behind the gradients, and the seconds of each round (``epoch_seconds``,
after a barrier). Read them with :func:`tricks_helpers.ddp.check.load_results`; the bytes
FSDP must hold per rank are :func:`expected_shard_bytes`.

Gloo on CPU: the model, the data and FSDP2's device mesh (:func:`cpu_mesh`) are on the CPU.
Without an explicit ``mesh=``, ``fully_shard`` builds its mesh on the accelerator
(``torch._C._get_accelerator()``: CUDA on a GPU host), moves the parameters and inputs there,
and a CPU target no longer matches; so every ``fully_shard`` call here names the CPU mesh.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from tricks_helpers._checks import check_choice, check_int, check_type
from tricks_helpers.ddp.common import AllReduceCounter, write_result

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh

__all__ = [
    "SHARD_VARIANTS",
    "make_mlp",
    "local_element_bytes",
    "expected_shard_bytes",
    "cpu_mesh",
    "run_variants",
]

#: Variant name -> DDP keyword arguments (``None``: FSDP2 ``fully_shard`` instead of DDP).
SHARD_VARIANTS: dict[str, dict[str, Any] | None] = {
    "ddp": {},
    "fsdp": None,
    "static_graph": {"static_graph": True},
    "bucket_view": {"gradient_as_bucket_view": True},
    "small_buckets": {"bucket_cap_mb": 0.001},
}

_FEATURES, _HIDDEN, _CLASSES = 32, 512, 10


def make_mlp(seed: int = 0) -> nn.Sequential:
    """The chapter's MLP (32 -> 512 -> 512 -> 10, ReLU), initialised from ``seed``.

    Raises:
        TypeError, ValueError: ``seed`` not an integer >= 0.
    """
    seed = check_int("make_mlp", "seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Linear(_FEATURES, _HIDDEN),
            nn.ReLU(),
            nn.Linear(_HIDDEN, _HIDDEN),
            nn.ReLU(),
            nn.Linear(_HIDDEN, _CLASSES),
        )


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if hasattr(t, "to_local") else t


def local_element_bytes(tensors: Any) -> int:
    """Bytes of the elements the tensors hold on this rank (a DTensor: its local shard only).

    What it counts, per layout: a strided tensor, ``numel() * element_size()`` (its elements,
    not its storage: a view counts its own elements, and two views of one storage count twice;
    ``tricks_helpers.memory.tensor_bytes`` counts deduplicated storage instead); a sparse COO
    tensor, what it stores: its values and its indices (``nnz`` values and ``sparse_dim x nnz``
    int64 indices), never its dense size.

    Raises:
        TypeError: ``tensors`` is not an iterable, or an element is not a tensor.
        ValueError: a tensor of another layout (sparse CSR/CSC/BSR/BSC, jagged), whose bytes
            this function does not count.
    """
    where = "local_element_bytes"
    if not isinstance(tensors, Iterable):
        raise TypeError(
            f"{where}: tensors must be an iterable of tensors, got {type(tensors).__name__}"
        )
    total = 0
    for i, t in enumerate(tensors):
        check_type(where, f"tensors[{i}]", t, torch.Tensor)
        local = _local(t)
        if local.layout == torch.strided:
            total += local.numel() * local.element_size()
        elif local.layout == torch.sparse_coo:
            values, indices = local._values(), local._indices()
            total += values.numel() * values.element_size()
            total += indices.numel() * indices.element_size()
        else:
            raise ValueError(
                f"{where}: tensors[{i}] has layout {local.layout}; only strided and "
                f"sparse COO tensors are counted"
            )
    return total


def expected_shard_bytes(model: nn.Module, world_size: int, rank: int) -> int:
    """The parameter bytes ``fully_shard`` leaves on ``rank``: dim 0 of every parameter split
    like ``torch.chunk`` (ranks hold ``ceil(rows / world)`` rows, the last ones fewer or none).

    So every rank holds the replica's bytes / world within the padding: at most
    ``ceil(rows / world)`` rows of each parameter, what FSDP's padded shard holds (the padding
    itself is not counted). With rows divisible by the world, exactly bytes / world.

    Raises:
        TypeError: ``model`` not a module, or ranks not integers.
        ValueError: ``world_size < 1`` or ``rank`` outside ``[0, world_size)``.
    """
    check_type("expected_shard_bytes", "model", model, nn.Module)
    world_size = check_int("expected_shard_bytes", "world_size", world_size, minimum=1)
    rank = check_int("expected_shard_bytes", "rank", rank, minimum=0, maximum=world_size - 1)
    total = 0
    for p in model.parameters():
        rows = p.shape[0] if p.dim() else 1
        per = math.ceil(rows / world_size)
        mine = max(0, min(per, rows - rank * per))
        total += mine * (p.numel() // rows) * p.element_size()
    return total


def cpu_mesh() -> DeviceMesh:
    """FSDP2's 1-D device mesh over every rank of the gloo process group, on the CPU.

    ``fully_shard(module)`` without ``mesh=`` builds ``init_device_mesh(accelerator, (world,))``
    with ``torch._C._get_accelerator()``, CUDA on a GPU host even under gloo, and moves the
    parameters there; this mesh keeps them on the CPU, where gloo and the chapter's data are.

    Returns:
        A ``DeviceMesh`` of device type ``"cpu"`` and shape ``(world_size,)``.

    Raises:
        ValueError: no process group is initialised, or its backend is not gloo (a CPU mesh
            on NCCL has no collective to run).
    """
    if not dist.is_initialized():
        raise ValueError("cpu_mesh: no process group: call dist.init_process_group('gloo') first")
    backend = dist.get_backend()
    if backend != "gloo":
        raise ValueError(f"cpu_mesh: the process group must use gloo (CPU), got {backend!r}")
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (dist.get_world_size(),))


class _Run:
    """One variant on this rank: its wrapped model, optimizer, data stream and records."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.model = make_mlp(seed)  # alike on every rank
        self.replica_bytes = local_element_bytes(self.model.parameters())
        self.counter = AllReduceCounter()
        if SHARD_VARIANTS[name] is None:
            from torch.distributed.fsdp import fully_shard

            mesh = cpu_mesh()  # not the accelerator's: the model and the data stay on the CPU
            for layer in self.model:
                if isinstance(layer, nn.Linear):
                    fully_shard(layer, mesh=mesh)
            self.net = fully_shard(self.model, mesh=mesh)
        else:
            self.net = nn.parallel.DistributedDataParallel(self.model, **SHARD_VARIANTS[name])
            self.net.register_comm_hook(self.counter, AllReduceCounter.hook)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.data = torch.Generator().manual_seed(seed + 1)  # same global batches on every rank
        self.losses: list[float] = []
        self.seconds: list[float] = []
        self.storages = 0

    def round(self, steps: int, batch_size: int) -> None:
        rank, world = dist.get_rank(), dist.get_world_size()
        mine = slice(rank * batch_size, (rank + 1) * batch_size)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            x = torch.randn(world * batch_size, _FEATURES, generator=self.data)
            y = torch.randint(0, _CLASSES, (world * batch_size,), generator=self.data)
            loss = F.cross_entropy(self.net(x[mine]), y[mine])
            loss.backward()
            grads = [_local(p.grad) for p in self.model.parameters()]
            self.storages = len({g.untyped_storage().data_ptr() for g in grads})
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            self.losses.append(loss.item())
        self.seconds.append(time.perf_counter() - start)

    def result(self) -> dict[str, Any]:
        states = self.opt.state.values()
        moments = [v for s in states for v in s.values() if torch.is_tensor(v) and v.dim()]
        return dict(
            name=self.name,
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            losses=self.losses,
            device=sorted({_local(p).device.type for p in self.model.parameters()}),
            replica_bytes=self.replica_bytes,
            param_bytes=local_element_bytes(self.model.parameters()),
            optim_bytes=local_element_bytes(moments),
            allreduce_calls=self.counter.calls,
            grad_storages=self.storages,
            threads=torch.get_num_threads(),
            epoch_seconds=self.seconds,
        )


def run_variants(
    names: Sequence[str],
    out_dir: str | os.PathLike,
    *,
    rounds: int = 9,
    steps: int = 5,
    batch_size: int = 32,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Train the variants ``names`` on this rank of the initialised process group, interleaved.

    Round ``i`` of every variant runs before round ``i + 1`` of any (``steps`` steps each,
    after a barrier), so the rounds that ``bench.comparison_from_times`` pairs ran under
    similar conditions. Writes ``<out_dir>/<name>.rank<r>.json`` per variant (through a
    temporary name) with ``name``, ``rank``, ``world_size``, ``losses``, ``device`` (the device
    types of this rank's parameters, ``["cpu"]``), ``param_bytes``,
    ``optim_bytes``, ``replica_bytes``, ``allreduce_calls``, ``grad_storages`` (distinct
    storages behind the gradients at the last step: one per parameter, or one per bucket with
    ``gradient_as_bucket_view``), ``threads`` and ``epoch_seconds`` (one per round).

    Returns:
        Variant name -> this rank's result.

    Raises:
        TypeError, ValueError: an unknown or repeated variant, counts below 1, a missing
            ``out_dir``, no gloo process group (all checked before anything is built).
    """
    where = "run_variants"
    check_type(where, "names", names, Sequence)
    if isinstance(names, str) or not names or len(set(names)) != len(names):
        raise ValueError(f"{where}: names must be distinct variant names, got {names!r}")
    for n in names:
        check_choice(where, "names", n, SHARD_VARIANTS)
    check_type(where, "out_dir", out_dir, (str, os.PathLike))
    if not Path(out_dir).is_dir():
        raise ValueError(f"{where}: out_dir: no such directory: {os.fspath(out_dir)!r}")
    rounds = check_int(where, "rounds", rounds, minimum=1)
    steps = check_int(where, "steps", steps, minimum=1)
    batch_size = check_int(where, "batch_size", batch_size, minimum=1)
    seed = check_int(where, "seed", seed, minimum=0)
    backend = dist.get_backend() if dist.is_initialized() else None
    if backend != "gloo":
        raise ValueError(
            f"{where}: needs an initialised gloo process group (the model and data are on the "
            f"CPU), got {backend or 'none'}"
        )
    runs = [_Run(n, seed) for n in names]
    for _ in range(rounds):
        for run in runs:
            run.round(steps, batch_size)
    results = {}
    for run in runs:
        results[run.name] = result = run.result()
        write_result(out_dir, result)
    return results
