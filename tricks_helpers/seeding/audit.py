"""The DataLoader worker-seeding audit (introduced in chapter 01).

:func:`find_duplicate_samples` fetches the same items in several workers and epochs, inside
the workers, and counts where the random part of the samples repeats; it also reports what
:func:`tricks_helpers.seeding.seed_worker` did in each worker. :func:`fingerprint` is the
bitwise digest it compares samples by. :mod:`tricks_helpers.seeding` hands both on.

Importing this module changes no global state.
"""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

from tricks_helpers._checks import (
    check_bool,
    check_callable,
    check_choice,
    check_int,
    check_number,
    check_type,
)
from tricks_helpers.seeding.seeds import worker_seeding

__all__ = ["DuplicateReport", "find_duplicate_samples", "fingerprint"]


def fingerprint(sample: Any) -> str:
    """A hex digest of a sample's exact content (bitwise for tensors, arrays and floats).

    Handles dense tensors (quantized ones by their parameters and integers), numpy arrays and
    scalars, Python scalars and strings, and nested lists/tuples/dicts of them; anything else
    is fingerprinted through ``pickle``.

    Raises:
        TypeError: on tensors without dense data (sparse, nested, mkldnn, meta) or an object
            ``pickle`` cannot handle (e.g. a lambda).
    """
    h = hashlib.blake2b(digest_size=16)
    _feed(h, sample)
    return h.hexdigest()


def _feed_tensor(h: Any, x: torch.Tensor) -> None:
    if x.layout != torch.strided or x.is_nested or x.is_mkldnn or x.is_meta:
        raise TypeError(
            f"fingerprint: only dense tensors with data can be fingerprinted, got "
            f"layout {x.layout}{', nested' if x.is_nested else ''}"
            f"{', meta' if x.is_meta else ''}"
        )
    h.update(f"T{x.dtype}{tuple(x.shape)}".encode())
    if x.is_quantized:  # its storage cannot be viewed as bytes: parameters, then integers
        scheme = x.qscheme()
        h.update(str(scheme).encode())
        if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            _feed(h, (float(x.q_scale()), int(x.q_zero_point())))
        else:
            _feed(
                h, (x.q_per_channel_axis(), x.q_per_channel_scales(), x.q_per_channel_zero_points())
            )
        x = x.int_repr()
    t = x.detach().resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
    h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def _feed(h: Any, x: Any) -> None:
    if isinstance(x, torch.Tensor):
        _feed_tensor(h, x)
    elif isinstance(x, (np.ndarray, np.generic)):
        a = np.ascontiguousarray(x)
        h.update(f"A{a.dtype.str}{a.shape}".encode())
        h.update(pickle.dumps(a, protocol=4) if a.dtype.hasobject else a.tobytes())
    elif isinstance(x, float):
        h.update(b"f" + np.float64(x).tobytes())
    elif isinstance(x, (bool, int, str, bytes, type(None), complex)):
        h.update(f"{type(x).__name__}:{x!r};".encode())
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}[{len(x)}](".encode())
        for item in x:
            _feed(h, item)
        h.update(b")")
    elif isinstance(x, dict):
        h.update(f"dict[{len(x)}](".encode())
        for key, value in x.items():
            _feed(h, key)
            _feed(h, value)
        h.update(b")")
    else:
        try:
            raw = pickle.dumps(x, protocol=4)
        except Exception as exc:  # PicklingError, AttributeError, TypeError...
            raise TypeError(f"fingerprint: cannot fingerprint a {type(x).__name__}: {exc}") from exc
        h.update(b"P" + raw)


def _collate_fingerprints(batch: list) -> tuple[int, list[str], Any]:

    info = get_worker_info()
    record = worker_seeding()
    seeded = None if record is None else (record.seed, record.reseeded)
    return (-1 if info is None else info.id), [fingerprint(s) for s in batch], seeded


@dataclass(frozen=True)
class DuplicateReport:
    """What :func:`find_duplicate_samples` found.

    ``across_workers`` counts (epoch, item, pair of workers) whose random outputs were equal;
    ``across_epochs`` counts (worker, item, pair of epochs) likewise. Both 0 means clean.
    The ``*_checked`` fields are the number of comparisons made (the denominators).
    ``seed_worker_calls`` counts the distinct :func:`~tricks_helpers.seeding.seed_worker` runs
    seen in the workers (``num_workers * epochs`` without persistent workers, ``num_workers``
    with them, 0 when it is not the ``worker_init_fn``), and ``reseeded`` lists the RNG paths
    they reseeded.
    """

    across_workers: int
    across_epochs: int
    across_workers_checked: int
    across_epochs_checked: int
    items_probed: int
    items_without_randomness: int
    num_workers: int
    epochs: int
    repeats: int
    persistent_workers: bool
    seed_worker_calls: int = 0
    reseeded: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """True when no random output repeated across workers or epochs."""
        return self.across_workers == 0 and self.across_epochs == 0

    def __str__(self) -> str:
        random_items = self.items_probed - self.items_without_randomness
        head = (
            f"{self.items_probed} items probed ({random_items} random, "
            f"{self.items_without_randomness} without randomness), "
            f"{self.num_workers} workers x {self.epochs} epochs"
            f"{', persistent workers' if self.persistent_workers else ''}"
        )
        tail = ""
        if self.seed_worker_calls:
            tail = (
                f"; seed_worker ran {self.seed_worker_calls} times, reseeding "
                f"{len(self.reseeded)} RNG object(s)"
            )
        if random_items == 0:
            return f"{head}: no randomness found, nothing to compare{tail}"
        verdict = "clean" if self.clean else "DUPLICATES"
        return (
            f"{head}: repeats across workers {self.across_workers}/"
            f"{self.across_workers_checked}, across epochs {self.across_epochs}/"
            f"{self.across_epochs_checked} -> {verdict}{tail}"
        )


def _check_dataset(dataset: Any) -> int:
    if isinstance(dataset, IterableDataset):
        raise TypeError(
            "find_duplicate_samples: iterable-style datasets are not supported "
            "(their workers cannot be asked for the same items)"
        )
    try:
        n = len(dataset)
    except TypeError as exc:
        raise TypeError(
            "find_duplicate_samples: dataset must be map-style with __len__, got "
            f"{type(dataset).__name__}"
        ) from exc
    if n == 0:
        raise ValueError("find_duplicate_samples: the dataset is empty")
    return n


def _stop_workers(it: Any) -> None:
    """Stop the workers of a loader iterator whose workers hang, without waiting on them.

    DataLoader's own shutdown asks each worker to exit, waits 5 s for each, then terminates
    it. A worker stuck in ``__getitem__`` never exits, so it is terminated first here (after
    taking its pid off the SIGCHLD watch list, which would report the kill as a crash); the
    loader's shutdown then finds it gone. Falls back to the plain shutdown if this torch lays
    its iterator out differently.
    """
    workers = getattr(it, "_workers", None)
    signals = getattr(torch.utils.data._utils, "signal_handling", None)
    remove = getattr(signals, "_remove_worker_pids", None)
    if workers and remove is not None and getattr(it, "_worker_pids_set", False):
        remove(id(it))
        it._worker_pids_set = False
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=5)
    shutdown = getattr(it, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def _epochs(loader: DataLoader, epochs: int, timeout: float) -> list[list]:
    """Each epoch's batches, as (worker, fingerprints, seeding record); workers always shut down."""
    out: list[list] = []
    timed_out = None
    for epoch in range(epochs):
        it = iter(loader)
        try:
            out.append(list(it))
        except RuntimeError as exc:
            if "timed out" not in str(exc):
                raise
            timed_out = epoch
        finally:
            if timed_out is not None:
                _stop_workers(it)
        if timed_out is not None:
            break
    if timed_out is not None:  # raised outside the except block: no chained traceback
        raise TimeoutError(
            f"find_duplicate_samples: no batch from the workers within "
            f"{timeout:g} s in epoch {timed_out}; __getitem__ (or the "
            f"worker_init_fn) blocks or is very slow. The workers were stopped. "
            f"Raise timeout= if the dataset is just slow."
        )
    return out


def find_duplicate_samples(
    dataset: Dataset,
    *,
    num_workers: int = 2,
    epochs: int = 2,
    worker_init_fn: Callable[[int], None] | None = None,
    items: int = 8,
    repeats: int = 4,
    persistent_workers: bool = False,
    generator: torch.Generator | None = None,
    timeout: float = 120.0,
    multiprocessing_context: str | None = None,
) -> DuplicateReport:
    """Audit a map-style dataset for random outputs that repeat across workers or epochs.

    Every worker fetches the same probe items (``items`` indices spread over the dataset),
    each ``repeats`` times, in every epoch; the samples are fingerprinted inside the workers.
    For one item, the sequence of its ``repeats`` outputs in one worker and epoch is its
    *random stream*. Two workers with equal streams for an item (same epoch) count as a repeat
    across workers; one worker with equal streams for an item in two epochs counts as a
    repeat across epochs. Items whose ``repeats`` outputs are all equal in every worker and
    epoch have no randomness (e.g. no augmentation) and are left out, so a dataset of identical
    items is not called duplicated, and a dataset of distinct items is not called clean.

    Args:
        dataset: a map-style dataset (``__len__`` and ``__getitem__``); samples may be
            tensors, arrays, numbers, strings, or tuples/lists/dicts of them.
        num_workers: DataLoader workers (at least 2).
        epochs: passes over the probe batches (at least 2).
        worker_init_fn: passed to the DataLoader (e.g. :func:`~tricks_helpers.seeding.seed_worker`).
        items: how many items to probe (fewer if the dataset is smaller).
        repeats: fetches of each item per worker and epoch; raise it for augmentations with
            few outcomes (a coin-flip augmentation repeats by chance with 2**-repeats).
        persistent_workers: passed to the DataLoader.
        generator: passed to the DataLoader (draws the workers' base seed each epoch).
        timeout: seconds to wait for each worker's batch (DataLoader's ``timeout=``); a
            ``__getitem__`` that blocks makes the audit fail instead of hanging forever.
        multiprocessing_context: how the workers start (``"fork"``, ``"spawn"``,
            ``"forkserver"``; ``None``: the platform's default), passed to the DataLoader.
            Under spawn and forkserver the dataset and ``worker_init_fn`` must be importable.

    Returns:
        A :class:`DuplicateReport`; ``str()`` of it is a one-line summary.

    Raises:
        TypeError: on wrong-typed arguments, an iterable-style dataset or one without ``__len__``.
        ValueError: on counts or a timeout out of range, or an empty dataset.
        TimeoutError: when a worker delivers no batch within ``timeout`` seconds (the workers
            are stopped first).
        RuntimeError: if the loader did not hand one probe batch to each worker per epoch.
    """
    where = "find_duplicate_samples"
    num_workers = check_int(where, "num_workers", num_workers, minimum=2)
    epochs = check_int(where, "epochs", epochs, minimum=2)
    items = check_int(where, "items", items, minimum=1)
    repeats = check_int(where, "repeats", repeats, minimum=2)
    if worker_init_fn is not None:
        check_callable(where, "worker_init_fn", worker_init_fn)
    check_bool(where, "persistent_workers", persistent_workers)
    if generator is not None:
        check_type(where, "generator", generator, torch.Generator)
    timeout = check_number(
        where, "timeout", timeout, minimum=0.0, strict_minimum=True, maximum=threading.TIMEOUT_MAX
    )
    if multiprocessing_context is not None:
        check_choice(
            where,
            "multiprocessing_context",
            multiprocessing_context,
            multiprocessing.get_all_start_methods(),
        )
    n = _check_dataset(dataset)

    probe = sorted({int(i) for i in np.linspace(0, n - 1, min(items, n))})
    batch = probe * repeats
    loader = DataLoader(
        dataset,
        batch_sampler=[batch] * num_workers,
        num_workers=num_workers,
        collate_fn=_collate_fingerprints,
        worker_init_fn=worker_init_fn,
        persistent_workers=persistent_workers,
        generator=generator,
        timeout=timeout,
        multiprocessing_context=multiprocessing_context,
    )
    # streams[epoch][worker][item] = tuple of the item's `repeats` fingerprints
    streams: list[dict[int, dict[int, tuple[str, ...]]]] = []
    records: dict[tuple[int, int], tuple[str, ...]] = {}  # (worker, seed) -> paths reseeded
    for epoch, batches in enumerate(_epochs(loader, epochs, timeout)):
        per_worker: dict[int, dict[int, tuple[str, ...]]] = {}
        for worker, prints, seeded in batches:
            if worker in per_worker or worker < 0:
                raise RuntimeError(
                    "find_duplicate_samples: the DataLoader did not give one "
                    f"probe batch to each worker in epoch {epoch}"
                )
            per_worker[worker] = {
                i: tuple(prints[k * len(probe) + j] for k in range(repeats))
                for j, i in enumerate(probe)
            }
            if seeded is not None:
                records[worker, seeded[0]] = seeded[1]
        if sorted(per_worker) != list(range(num_workers)):
            raise RuntimeError(
                "find_duplicate_samples: the DataLoader did not give one probe "
                f"batch to each worker in epoch {epoch}"
            )
        streams.append(per_worker)
    del loader  # shuts persistent workers down

    random_items = [
        i
        for i in probe
        if any(len(set(streams[e][w][i])) > 1 for e in range(epochs) for w in range(num_workers))
    ]
    worker_pairs = list(itertools.combinations(range(num_workers), 2))
    epoch_pairs = list(itertools.combinations(range(epochs), 2))
    across_workers = sum(
        streams[e][a][i] == streams[e][b][i]
        for e in range(epochs)
        for i in random_items
        for a, b in worker_pairs
    )
    across_epochs = sum(
        streams[e][w][i] == streams[f][w][i]
        for w in range(num_workers)
        for i in random_items
        for e, f in epoch_pairs
    )
    reseeded = tuple(dict.fromkeys(p for paths in records.values() for p in paths))
    return DuplicateReport(
        across_workers=int(across_workers),
        across_epochs=int(across_epochs),
        across_workers_checked=len(random_items) * len(worker_pairs) * epochs,
        across_epochs_checked=len(random_items) * num_workers * len(epoch_pairs),
        items_probed=len(probe),
        items_without_randomness=len(probe) - len(random_items),
        num_workers=num_workers,
        epochs=epochs,
        repeats=repeats,
        persistent_workers=persistent_workers,
        seed_worker_calls=len(records),
        reseeded=reseeded,
    )
