"""A small, complete DistributedDataParallel training run (introduced in chapter 08).

Every rank runs :func:`train`; launch it under torchrun through the family's entry point
(from a notebook: :func:`tricks_helpers.ddp.run_torchrun`)::

    torchrun --standalone --nproc-per-node 2 -m tricks_helpers.ddp train --out DIR \\
        --variant ddp --variant no_set_epoch:set_epoch=0 --variant accum_sync:accum=4,no_sync=0

Each ``--variant NAME[:key=value,...]`` trains one configuration (a :class:`RunConfig`; the
keys are its fields, ``0``/``1`` for booleans) in the same process group, so one launch
(a few seconds of process start-up) serves several experiments. Per run and rank it writes
``NAME.rank<r>.json`` (see :func:`train` for the fields: the sample order of every epoch,
the losses, parameter hashes, the all-reduce count, timings) and rank 0 writes
``NAME.pt``, the final ``state_dict``. Read them back with
:func:`tricks_helpers.ddp.check.load_results`.

Backend (chosen by :mod:`tricks_helpers.ddp.ranks`): NCCL with one GPU per process when CUDA
has enough GPUs for every local rank, else gloo on CPU. On NCCL the entry point first turns on
deterministic algorithms (:func:`tricks_helpers.determinism.enable_determinism`,
``warn_only=True``: an op without a deterministic kernel warns in the log) so that two launches
give bitwise-equal parameters on the same GPUs and rank count; gloo on CPU needs nothing (its
all-reduce sums in a fixed order). The same training run, simulated in one process on the same
global batches, is :func:`tricks_helpers.ddp.check.train_reference`: DDP must give its
parameters (up to float rounding).

Guarantees: the data set is generated from a fixed seed (identical on every rank); model
init is seeded alike on every rank; augmentation noise is seeded apart (``seed + 1 + rank``);
results are written to a temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from tricks_helpers._checks import check_bool, check_int, check_number, check_type
from tricks_helpers._io import atomic_target
from tricks_helpers.ddp.common import AllReduceCounter, write_result

__all__ = [
    "RunConfig",
    "IndexedDataset",
    "make_dataset",
    "make_model",
    "params_hash",
    "parse_run",
    "train",
]

_INT_FIELDS = ("epochs", "batch_size", "accum", "samples", "features", "classes", "hidden")
_BOOL_FIELDS = ("no_sync", "set_epoch", "init_seed_per_rank")


@dataclass(frozen=True)
class RunConfig:
    """One training configuration.

    Attributes:
        name: file-name stem of the results (letters, digits, ``_`` and ``-``).
        epochs: passes over the data set.
        batch_size: samples per rank per micro-step (the global batch is
            ``batch_size * world_size``).
        accum: micro-steps per optimizer step (gradient accumulation).
        no_sync: skip the all-reduce on all but the last micro-step (``DDP.no_sync``).
        set_epoch: call ``DistributedSampler.set_epoch(epoch)`` every epoch.
        init_seed_per_rank: seed model init with ``seed + rank`` (a mistake, for the chapter).
        seed: base seed (model init, sampler shuffle; augmentation uses ``seed + 1 + rank``).
        lr: SGD learning rate (momentum 0.9).
        noise: std of the Gaussian noise added to inputs as augmentation.
        samples, features, classes, hidden: data set and model size.
    """

    name: str = "run"
    epochs: int = 3
    batch_size: int = 16
    accum: int = 1
    no_sync: bool = True
    set_epoch: bool = True
    init_seed_per_rank: bool = False
    seed: int = 0
    lr: float = 0.05
    noise: float = 0.1
    samples: int = 256
    features: int = 32
    classes: int = 4
    hidden: int = 256

    def __post_init__(self) -> None:
        """Check every field (TypeError for a wrong type, ValueError for a wrong value)."""
        check_type("RunConfig", "name", self.name, str)
        if not self.name or not all(c.isalnum() or c in "_-" for c in self.name):
            raise ValueError(
                f"RunConfig: name must be letters, digits, '_' or '-', got {self.name!r}"
            )
        for key in _INT_FIELDS:
            check_int("RunConfig", key, getattr(self, key), minimum=1)
        check_int("RunConfig", "seed", self.seed, minimum=0)
        for key in _BOOL_FIELDS:
            check_bool("RunConfig", key, getattr(self, key))
        check_number("RunConfig", "lr", self.lr, minimum=0.0, strict_minimum=True)
        check_number("RunConfig", "noise", self.noise, minimum=0.0)

    def steps_per_epoch(self, world_size: int) -> int:
        """Micro-steps per epoch on each rank; raises unless it is a multiple of ``accum``.

        Raises:
            TypeError: ``world_size`` is not an integer.
            ValueError: ``world_size < 1``, or the batches per epoch are not a positive
                multiple of ``accum``.
        """
        world_size = check_int("steps_per_epoch", "world_size", world_size, minimum=1)
        per_rank = self.samples // world_size  # DistributedSampler(drop_last=True)
        micro = per_rank // self.batch_size
        if micro < 1 or micro % self.accum:
            raise ValueError(
                f"RunConfig {self.name!r}: {per_rank} samples per rank make {micro} "
                f"batches of {self.batch_size}, not a positive multiple of "
                f"accum={self.accum}"
            )
        return micro


class IndexedDataset(Dataset):
    """``(x, y, index)`` triples: the index lets a rank record which samples it saw."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor) -> None:
        check_type("IndexedDataset", "X", X, torch.Tensor)
        check_type("IndexedDataset", "y", y, torch.Tensor)
        if len(X) != len(y):
            raise ValueError(f"IndexedDataset: {len(X)} inputs but {len(y)} labels")
        self.X, self.y = X, y

    def __len__(self) -> int:
        return len(self.X)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        return self.X[i], self.y[i], i


def make_dataset(cfg: RunConfig) -> IndexedDataset:
    """A synthetic classification set drawn from a fixed generator: the same on every rank."""
    check_type("make_dataset", "cfg", cfg, RunConfig)
    g = torch.Generator().manual_seed(1234)
    X = torch.randn(cfg.samples, cfg.features, generator=g)
    W = torch.randn(cfg.features, cfg.classes, generator=g)
    y = (X @ W + 0.5 * torch.randn(cfg.samples, cfg.classes, generator=g)).argmax(1)
    return IndexedDataset(X, y)


def make_model(cfg: RunConfig) -> nn.Module:
    """An MLP without dropout or batch norm (both would make ranks differ from one process)."""
    check_type("make_model", "cfg", cfg, RunConfig)
    return nn.Sequential(
        nn.Linear(cfg.features, cfg.hidden),
        nn.ReLU(),
        nn.Linear(cfg.hidden, cfg.hidden),
        nn.ReLU(),
        nn.Linear(cfg.hidden, cfg.classes),
    )


def params_hash(model: nn.Module) -> str:
    """SHA-256 (first 16 hex digits) of all parameters' bytes, in order, read on the CPU."""
    check_type("params_hash", "model", model, nn.Module)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def parse_run(spec: str, defaults: RunConfig | None = None) -> RunConfig:
    """Parse ``NAME[:key=value,...]`` into a :class:`RunConfig` (booleans as 0/1).

    Raises:
        TypeError: ``spec`` is not a string or ``defaults`` not a :class:`RunConfig`.
        ValueError: on an unknown key, a value that does not parse as the field's type, or a
            value out of range (see :class:`RunConfig`).
    """
    check_type("parse_run", "spec", spec, str)
    if defaults is not None:
        check_type("parse_run", "defaults", defaults, RunConfig)
    defaults = defaults or RunConfig()
    name, _, rest = spec.partition(":")
    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    changes: dict[str, Any] = {"name": name}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep or key not in fields or key == "name":
            raise ValueError(
                f"parse_run: bad item {item!r} in {spec!r}; keys are "
                f"{sorted(k for k in fields if k != 'name')}"
            )
        kind = type(getattr(defaults, key))
        try:
            if kind is bool:
                if value not in ("0", "1"):
                    raise ValueError(value)
                changes[key] = value == "1"
            else:
                changes[key] = kind(value)
        except ValueError:
            raise ValueError(f"parse_run: {key}={value!r} is not a valid {kind.__name__}") from None
    return dataclasses.replace(defaults, **changes)


def train(cfg: RunConfig, out_dir: str | os.PathLike) -> dict[str, Any]:
    """Train ``cfg`` on this rank of the initialised process group and write its results.

    Returns (and writes to ``<out_dir>/<name>.rank<r>.json``) a dict with: ``rank``,
    ``world_size``, ``backend``, ``device``, ``threads``, ``init_hash`` (parameters before
    the DDP wrap), ``wrapped_hash`` (after: DDP broadcasts rank 0's), ``final_hash``,
    ``epoch_orders`` (the data-set indices this rank trained on, per epoch), ``losses``
    (this rank's loss per micro-step), ``aug_first`` (its first augmentation noise values),
    ``allreduce_calls``, ``optimizer_steps`` and ``epoch_seconds``.
    """
    check_type("train", "cfg", cfg, RunConfig)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    out_dir = Path(out_dir)
    cfg.steps_per_epoch(world)  # validates accum against the batch count

    # 1. Seed ALIKE for model init: every rank builds the same initial model.
    torch.manual_seed(cfg.seed + (rank if cfg.init_seed_per_rank else 0))
    model = make_model(cfg).to(device)
    init_hash = params_hash(model)
    # 2. Wrap: DDP broadcasts rank 0's parameters and buffers to all ranks here.
    device_ids = [device.index] if device.type == "cuda" else None
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    wrapped_hash = params_hash(model)
    counter = AllReduceCounter()
    ddp.register_comm_hook(counter, AllReduceCounter.hook)

    data = make_dataset(cfg)
    # 3. Each rank reads its own 1/world of a shuffled permutation (drop_last: equal shares).
    sampler = DistributedSampler(
        data, num_replicas=world, rank=rank, shuffle=True, seed=cfg.seed, drop_last=True
    )
    loader = DataLoader(data, batch_size=cfg.batch_size, sampler=sampler)
    # 4. Seed APART for augmentation: ranks must not draw the same noise.
    aug = torch.Generator().manual_seed(cfg.seed + 1 + rank)
    opt = torch.optim.SGD(ddp.parameters(), lr=cfg.lr, momentum=0.9)

    epoch_orders, losses, aug_first, epoch_seconds, steps = [], [], [], [], 0
    for epoch in range(cfg.epochs):
        if cfg.set_epoch:
            sampler.set_epoch(epoch)  # without it: the same shuffle every epoch
        order: list[int] = []
        dist.barrier()
        start = time.perf_counter()
        for i, (x, y, idx) in enumerate(loader):
            noise = torch.randn(x.shape, generator=aug)
            if not aug_first:
                aug_first = noise.flatten()[:4].tolist()
            x, y = (x + cfg.noise * noise).to(device), y.to(device)
            order += idx.tolist()
            last_micro = (i + 1) % cfg.accum == 0
            # 5. no_sync: accumulate locally, all-reduce only on the last micro-step.
            sync = contextlib.nullcontext() if (last_micro or not cfg.no_sync) else ddp.no_sync()
            with sync:
                loss = F.cross_entropy(ddp(x), y) / cfg.accum
                loss.backward()
            losses.append(loss.item() * cfg.accum)
            if last_micro:
                opt.step()
                opt.zero_grad(set_to_none=True)
                steps += 1
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        epoch_seconds.append(time.perf_counter() - start)
        epoch_orders.append(order)

    result = dict(
        name=cfg.name,
        config=dataclasses.asdict(cfg),
        rank=rank,
        world_size=world,
        backend=dist.get_backend(),
        device=device.type,
        threads=torch.get_num_threads(),
        init_hash=init_hash,
        wrapped_hash=wrapped_hash,
        final_hash=params_hash(model),
        epoch_orders=epoch_orders,
        losses=losses,
        aug_first=aug_first,
        allreduce_calls=counter.calls,
        optimizer_steps=steps,
        epoch_seconds=epoch_seconds,
    )
    write_result(out_dir, result)
    if rank == 0:
        with atomic_target(out_dir / f"{cfg.name}.pt") as tmp:  # a unique temporary
            torch.save({k: v.cpu() for k, v in model.state_dict().items()}, tmp)
    return result
