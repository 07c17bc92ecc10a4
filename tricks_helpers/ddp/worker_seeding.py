"""DataLoader worker streams across DDP ranks: the duplicate and the fix (introduced in chapter 08).

A DDP script seeds every rank alike (``torch.manual_seed(seed)``) so that every rank builds the
same model. A ``DataLoader`` without ``generator=`` then draws its workers' base seed from that
global RNG, which is in the same state on every rank: worker ``w`` of rank 0 and worker ``w``
of rank 1 get the same seed, and their random augmentation streams repeat across ranks. Chapter
01's ``seeding.seed_worker`` does not help (it derives every stream from that same seed); the
fix is the rank folded into the loader's generator, ``torch.Generator().manual_seed(seed +
rank)``, which keeps each rank reproducible run to run.

Every rank runs :func:`run_rank`; launch it under torchrun through the family's entry point
(from a notebook: :func:`tricks_helpers.ddp.run_torchrun`)::

    torchrun --standalone --nproc-per-node 2 -m tricks_helpers.ddp seeding --out DIR \\
        --seeding alike --seeding rank_seed_worker --workers 2 --epochs 2 --mp-context fork

Each ``--seeding`` (one of :data:`SEEDINGS`) records, on every rank, the random draws each
worker makes in each epoch (:func:`record_streams`: one torch value and one value of the
dataset's own numpy ``Generator`` per item) and writes ``<seeding>.rank<r>.json``; read them
back with :func:`tricks_helpers.ddp.check.load_results` and count the repeats with
:func:`count_repeats`.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, get_worker_info
from torch.utils.data.distributed import DistributedSampler

from tricks_helpers._checks import check_choice, check_int, check_type
from tricks_helpers.ddp.common import write_result
from tricks_helpers.seeding import seed_worker

__all__ = [
    "SEEDINGS",
    "AugmentedItems",
    "make_loader",
    "record_streams",
    "StreamRepeats",
    "count_repeats",
    "run_rank",
]

#: How the loader of each rank is seeded (every rank first calls ``torch.manual_seed(seed)``).
SEEDINGS = {
    "alike": "no generator, no worker_init_fn",
    "seed_worker": "worker_init_fn=seed_worker",
    "rank": "generator seeded with seed + rank",
    "rank_seed_worker": "generator seeded with seed + rank, worker_init_fn=seed_worker",
}


class AugmentedItems(Dataset):
    """``samples`` items whose every fetch makes two random draws, like an augmentation.

    ``__getitem__(i)`` returns ``(i, worker id, torch draw, numpy draw)``: one value of torch's
    global RNG (``torch.rand``) and one of the dataset's own ``numpy.random.Generator``, made
    in ``__init__`` from ``seed`` (chapter 01's bug: every worker copies it in the same state
    unless a ``worker_init_fn`` reseeds it). The worker id is ``-1`` in the main process.

    Raises:
        TypeError, ValueError: ``samples`` not an integer >= 1 or ``seed`` not one >= 0.
    """

    def __init__(self, samples: int = 32, seed: int = 0) -> None:
        self.samples = check_int("AugmentedItems", "samples", samples, minimum=1)
        seed = check_int("AugmentedItems", "seed", seed, minimum=0)
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, i: int) -> tuple[int, int, float, float]:
        info = get_worker_info()
        worker = info.id if info is not None else -1
        return int(i), worker, torch.rand(()).item(), float(self.rng.random())


def make_loader(
    dataset: Dataset,
    rank: int,
    world_size: int,
    seeding: str,
    *,
    multiprocessing_context: str,
    seed: int = 0,
    batch_size: int = 4,
    num_workers: int = 2,
) -> DataLoader:
    """This rank's loader: its ``DistributedSampler`` shard, its workers seeded by ``seeding``.

    With ``seeding="rank*"`` the loader's generator is seeded with ``seed + rank``: each rank
    draws its own workers' base seeds, reproducibly. Caveat: run seed ``s + 1`` then draws on
    rank 0 what run seed ``s`` draws on rank 1; keep run seeds ``world_size`` apart.

    Args:
        dataset: a map-style dataset.
        rank, world_size: this rank and the number of ranks (no process group needed).
        seeding: a key of :data:`SEEDINGS`.
        multiprocessing_context: how workers start (``"fork"``, ``"spawn"``, ...), named
            explicitly; under spawn the dataset must be importable.
        seed: the run's seed (the sampler's shuffle and, for ``rank*``, the generator).
        batch_size: items per batch; the collate keeps them as a list of tuples.
        num_workers: worker processes (at least 1).

    Raises:
        TypeError: on arguments of the wrong type.
        ValueError: an unknown ``seeding`` or start method, ``rank`` outside
            ``[0, world_size)``, or a count below its minimum.
    """
    where = "make_loader"
    world_size = check_int(where, "world_size", world_size, minimum=1)
    rank = check_int(where, "rank", rank, minimum=0, maximum=world_size - 1)
    check_choice(where, "seeding", seeding, SEEDINGS)
    check_type(where, "multiprocessing_context", multiprocessing_context, str)
    check_choice(
        where,
        "multiprocessing_context",
        multiprocessing_context,
        multiprocessing.get_all_start_methods(),
    )
    seed = check_int(where, "seed", seed, minimum=0)
    batch_size = check_int(where, "batch_size", batch_size, minimum=1)
    num_workers = check_int(where, "num_workers", num_workers, minimum=1)
    sampler = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=True
    )
    generator = None
    if seeding.startswith("rank"):  # the fix: the rank folded into the workers' base seed
        generator = torch.Generator().manual_seed(seed + rank)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=list,
        worker_init_fn=seed_worker if seeding.endswith("seed_worker") else None,
        generator=generator,
        multiprocessing_context=multiprocessing_context,
    )


def record_streams(loader: DataLoader, epochs: int) -> list[list[dict[str, list]]]:
    """The random draws each worker of ``loader`` made, per epoch, in the order it made them.

    Calls ``loader.sampler.set_epoch(epoch)`` where the sampler has it. The loader must yield
    lists of ``(index, worker, torch draw, numpy draw)`` (:class:`AugmentedItems` with
    :func:`make_loader`).

    Returns:
        ``streams[epoch][worker]`` = ``{"indices": [...], "torch": [...], "numpy": [...]}``.

    Raises:
        TypeError: ``loader`` is not a DataLoader or ``epochs`` not an integer.
        ValueError: ``epochs < 1``, a loader without workers, or items not made by a worker.
    """
    check_type("record_streams", "loader", loader, DataLoader)
    epochs = check_int("record_streams", "epochs", epochs, minimum=1)
    if loader.num_workers < 1:
        raise ValueError("record_streams: the loader has no workers (num_workers=0)")
    out = []
    for epoch in range(epochs):
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        per_worker = [{"indices": [], "torch": [], "numpy": []} for _ in range(loader.num_workers)]
        for batch in loader:
            for index, worker, t, n in batch:
                if not 0 <= worker < loader.num_workers:
                    raise ValueError(f"record_streams: item {index} was not made by a worker")
                per_worker[worker]["indices"].append(index)
                per_worker[worker]["torch"].append(t)
                per_worker[worker]["numpy"].append(n)
        out.append(per_worker)
    return out


@dataclass(frozen=True)
class StreamRepeats:
    """How many worker streams repeat another one (per RNG: ``"torch"`` and ``"numpy"``).

    A *stream* is the sequence of draws one worker of one rank made in one epoch. Attributes:
    ``streams`` (how many there are: ranks x workers x epochs); ``across_ranks[rng]``: streams
    equal to a stream of another rank in the same epoch; ``across_workers[rng]``: streams equal
    to another worker's stream of the same rank and epoch; ``constant[rng]``: streams whose
    draws are all equal (no randomness at all, which would make every count meaningless).
    """

    streams: int
    across_ranks: dict[str, int]
    across_workers: dict[str, int]
    constant: dict[str, int]

    def __str__(self) -> str:
        return ", ".join(
            f"{rng}: {self.across_ranks[rng]} of {self.streams} streams repeated on another "
            f"rank, {self.across_workers[rng]} on another worker"
            for rng in self.across_ranks
        )


def count_repeats(rank_results: Sequence[dict[str, Any]]) -> StreamRepeats:
    """Count the worker streams that repeat across ranks and across workers.

    Args:
        rank_results: the per-rank results of one seeding (:func:`run_rank`, read back with
            :func:`tricks_helpers.ddp.check.load_results`), each with ``"streams"``.

    Raises:
        TypeError: ``rank_results`` is not a sequence of dicts.
        ValueError: fewer than 2 ranks, a rank without ``"streams"``, ranks with different
            numbers of epochs or workers, or an empty stream.
    """
    where = "count_repeats"
    check_type(where, "rank_results", rank_results, Sequence)
    for i, r in enumerate(rank_results):
        check_type(where, f"rank_results[{i}]", r, dict)
        if "streams" not in r:
            raise ValueError(f"{where}: rank_results[{i}] has no 'streams' (see run_rank)")
    if len(rank_results) < 2:
        raise ValueError(f"{where}: need the results of at least 2 ranks, got {len(rank_results)}")
    shapes = {(len(r["streams"]), *(len(e) for e in r["streams"])) for r in rank_results}
    if len(shapes) != 1:
        raise ValueError(f"{where}: ranks differ in epochs or workers: {sorted(shapes)}")
    epochs, workers = len(rank_results[0]["streams"]), len(rank_results[0]["streams"][0])
    ranks = len(rank_results)
    across_ranks, across_workers, constant = {}, {}, {}
    for rng in ("torch", "numpy"):
        s = [[[tuple(w[rng]) for w in e] for e in r["streams"]] for r in rank_results]
        if any(not x for r in s for e in r for x in e):
            raise ValueError(f"{where}: a worker made no draws; give every worker a batch")
        cells = list(itertools.product(range(ranks), range(epochs), range(workers)))
        across_ranks[rng] = sum(
            any(s[q][e][v] == s[r][e][w] for q in range(ranks) if q != r for v in range(workers))
            for r, e, w in cells
        )
        across_workers[rng] = sum(
            any(s[r][e][v] == s[r][e][w] for v in range(workers) if v != w) for r, e, w in cells
        )
        constant[rng] = sum(len(set(s[r][e][w])) == 1 for r, e, w in cells)
    return StreamRepeats(len(cells), across_ranks, across_workers, constant)


def run_rank(
    seeding: str,
    out_dir: str | os.PathLike,
    *,
    multiprocessing_context: str,
    seed: int = 0,
    epochs: int = 2,
    num_workers: int = 2,
    samples: int = 32,
    batch_size: int = 4,
) -> dict[str, Any]:
    """On this rank of the initialised process group: seed alike, record, write the results.

    Seeds torch alike on every rank (``torch.manual_seed(seed)``, what a DDP script does for the
    model), builds :class:`AugmentedItems` and :func:`make_loader`, and writes
    ``<out_dir>/<seeding>.rank<r>.json`` (through a temporary name) with ``name``, ``rank``,
    ``world_size``, ``seeding``, ``multiprocessing_context`` and ``streams``.

    Raises:
        TypeError, ValueError: as :func:`make_loader`, or a missing ``out_dir``.
    """
    check_type("run_rank", "out_dir", out_dir, (str, os.PathLike))
    if not Path(out_dir).is_dir():
        raise ValueError(f"run_rank: out_dir: no such directory: {os.fspath(out_dir)!r}")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(seed)  # ranks seeded ALIKE (the model must start equal on every rank)
    loader = make_loader(
        AugmentedItems(samples, seed),
        rank,
        world,
        seeding,
        multiprocessing_context=multiprocessing_context,
        seed=seed,
        batch_size=batch_size,
        num_workers=num_workers,
    )
    result = dict(
        name=seeding,
        rank=rank,
        world_size=world,
        seeding=seeding,
        multiprocessing_context=multiprocessing_context,
        streams=record_streams(loader, epochs),
    )
    write_result(out_dir, result)
    return result
