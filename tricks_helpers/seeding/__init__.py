"""Seeding, and reseeding the RNG objects a DataLoader worker copied (introduced in chapter 01).

- :func:`seed_everything` seeds Python's ``random``, numpy's global RNG and torch (CPU and
  every CUDA device) from one seed, after checking that numpy can take it.
- :func:`seed_worker` is a ``worker_init_fn`` for :class:`torch.utils.data.DataLoader`: it
  reseeds the global RNGs from the worker's seed **and** the RNG objects the worker's copy of
  the dataset holds, found by :func:`find_rng_objects`. Each RNG
  gets its own stream, derived from the worker seed and the RNG's path (:func:`derive_seed`),
  so streams differ between workers and, because the loader draws a new base seed per epoch,
  between epochs; with a seeded ``generator=`` on the loader they are also reproducible run
  to run.
  :func:`worker_seeding` tells, inside a worker, what it did.

This face hands on the names of three modules, each name with one home:
:mod:`~tricks_helpers.seeding.seeds` (the seeding above), :mod:`~tricks_helpers.seeding.rng_walk`
(:func:`find_rng_objects`, :class:`RNGWalk`: what the walk reaches) and
:mod:`~tricks_helpers.seeding.audit` (:func:`find_duplicate_samples`, the audit that shows the
bug and the fix, and :func:`fingerprint`).

Importing this module changes no global state.
"""

from tricks_helpers.seeding.audit import DuplicateReport, find_duplicate_samples, fingerprint
from tricks_helpers.seeding.rng_walk import RNGWalk, find_rng_objects
from tricks_helpers.seeding.seeds import (
    WorkerSeeding,
    derive_seed,
    reseed_rng_objects,
    seed_everything,
    seed_worker,
    worker_seeding,
)

__all__ = [
    "seed_everything",
    "seed_worker",
    "worker_seeding",
    "WorkerSeeding",
    "reseed_rng_objects",
    "find_rng_objects",
    "RNGWalk",
    "derive_seed",
    "DuplicateReport",
    "find_duplicate_samples",
    "fingerprint",
]
