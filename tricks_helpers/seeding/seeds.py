"""Seeds: one seed everywhere, derived streams, and ``seed_worker`` (introduced in chapter 01).

:func:`seed_everything`, :func:`derive_seed`, :func:`reseed_rng_objects`, :func:`seed_worker`
and :func:`worker_seeding`; the walk they reseed through is :mod:`tricks_helpers.seeding.rng_walk`.
Use the names through the face: ``from tricks_helpers import seeding``.

Importing this module changes no global state.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

from tricks_helpers._checks import check_int, check_type
from tricks_helpers.seeding.rng_walk import find_rng_objects, reseed_rng

__all__ = [
    "seed_everything",
    "seed_worker",
    "worker_seeding",
    "WorkerSeeding",
    "reseed_rng_objects",
    "derive_seed",
]

_MASK32 = 0xFFFFFFFF
_MAX_NUMPY_SEED = 2**32 - 1  # np.random.seed accepts 0 <= seed <= 2**32 - 1


def seed_everything(seed: int) -> int:
    """Seed Python's ``random``, numpy's global RNG and torch (CPU and all CUDA devices).

    The seed is validated first, so a bad seed changes nothing.

    Args:
        seed: an integer in ``[0, 2**32)`` (the range numpy's ``np.random.seed`` accepts);
            numpy integers are accepted, ``bool`` is not.

    Returns:
        The seed, as a Python ``int``.

    Raises:
        TypeError: if ``seed`` is not an integer (e.g. ``1.5``, ``"3"``, ``True``).
        ValueError: if it is outside ``[0, 2**32)``.
    """
    seed = check_int("seed_everything", "seed", seed, minimum=0, maximum=_MAX_NUMPY_SEED)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device (lazily when CUDA is not initialised)
    return seed


def derive_seed(base_seed: int, tag: str) -> int:
    """A reproducible 64-bit seed for the stream named ``tag`` under ``base_seed``.

    Uses :class:`numpy.random.SeedSequence` with the base seed's 32-bit words and a BLAKE2
    hash of ``tag`` as entropy: distinct tags or base seeds give independent streams, and the
    result does not depend on Python's per-process string hashing.

    Args:
        base_seed: a non-negative integer (e.g. ``get_worker_info().seed``, up to 64 bits).
        tag: names the stream, e.g. an attribute path such as ``"dataset.transform.rng"``.

    Returns:
        An integer in ``[0, 2**64)``.

    Raises:
        TypeError: on a non-integer base seed or a non-string tag.
        ValueError: on a negative base seed.
    """
    base_seed = check_int("derive_seed", "base_seed", base_seed, minimum=0)
    check_type("derive_seed", "tag", tag, str)
    words = [base_seed & _MASK32, (base_seed >> 32) & _MASK32, base_seed >> 64]
    digest = hashlib.blake2b(tag.encode("utf-8"), digest_size=16).digest()
    words += [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    state = np.random.SeedSequence(words).generate_state(2, dtype=np.uint32)
    return int(state[0]) | (int(state[1]) << 32)


def reseed_rng_objects(obj: Any, base_seed: int, *, root: str = "dataset") -> list[str]:
    """Reseed, in place, every RNG object :func:`find_rng_objects` finds from ``obj``.

    Each RNG is reseeded with ``derive_seed(base_seed, path)``, so its new stream depends only
    on the base seed and where it sits in the object, not on its previous state.

    Args:
        obj: the object to walk, typically a dataset.
        base_seed: the seed the streams derive from (e.g. the worker's seed).
        root: the name of ``obj`` in the returned paths.

    Returns:
        The paths of the RNGs reseeded, in walk order, e.g.
        ``["dataset.rng", "dataset.transforms[0].gen"]``.

    Raises:
        TypeError: on a non-integer ``base_seed`` or a non-string ``root``.
        ValueError: on a negative ``base_seed`` (checked before anything changes).
    """
    base_seed = check_int("reseed_rng_objects", "base_seed", base_seed, minimum=0)
    check_type("reseed_rng_objects", "root", root, str)
    walk = find_rng_objects(
        obj, root=root, visit=lambda rng, path: reseed_rng(rng, derive_seed(base_seed, path))
    )
    return list(walk.paths)


# --------------------------------------------------------------------------- seed_worker


@dataclass(frozen=True)
class WorkerSeeding:
    """What :func:`seed_worker` did in one worker process."""

    worker_id: int
    seed: int
    reseeded: tuple[str, ...]


_worker_record: WorkerSeeding | None = None  # set by seed_worker, in worker processes only


def worker_seeding() -> WorkerSeeding | None:
    """What :func:`seed_worker` did in this process, or ``None`` where it has not run.

    Only a DataLoader worker process has a record (the main process never runs
    ``seed_worker``); a persistent worker keeps the one of its single call.
    """
    return _worker_record


def seed_worker(worker_id: int) -> None:
    """``worker_init_fn`` giving every worker, and every epoch, fresh reproducible RNG streams.

    In the worker it seeds ``random``, torch and numpy's global RNG from
    ``get_worker_info().seed`` (torch does so too for ``random`` and torch since 1.9, and for
    numpy with its own hash), then reseeds the RNG objects held by the worker's copy of the
    dataset with :func:`reseed_rng_objects` (see "What the walk reaches" in
    :mod:`tricks_helpers.seeding.rng_walk`). The loader draws a new base seed for each epoch (unless
    ``persistent_workers=True``, where workers and their RNGs live on), from its
    ``generator=`` if given, so seeding that generator makes the streams reproducible.
    What it did is recorded in the worker (:func:`worker_seeding`).

    Args:
        worker_id: the id the DataLoader passes to ``worker_init_fn``.

    Raises:
        RuntimeError: when called outside a DataLoader worker process.
        TypeError: when ``worker_id`` is not an integer.
        ValueError: when ``worker_id`` is not this worker's id.
    """
    global _worker_record
    worker_id = check_int("seed_worker", "worker_id", worker_id, minimum=0)
    info = get_worker_info()
    if info is None:
        raise RuntimeError(
            "seed_worker must run inside a DataLoader worker: pass it as "
            "DataLoader(..., num_workers>0, worker_init_fn=seed_worker); "
            "in the main process use seed_everything or reseed_rng_objects"
        )
    if worker_id != info.id:
        raise ValueError(f"seed_worker: worker_id {worker_id!r} is not this worker's id {info.id}")
    seed = info.seed
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(np.random.SeedSequence(derive_seed(seed, "numpy-global")).generate_state(4))
    paths = reseed_rng_objects(info.dataset, seed)
    _worker_record = WorkerSeeding(worker_id=worker_id, seed=seed, reseeded=tuple(paths))
