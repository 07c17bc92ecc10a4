"""Seeding and the DataLoader worker-seeding audit (introduced in chapter 01).

Three tools:

- :func:`seed_everything` seeds Python's ``random``, numpy's global RNG and torch (CPU and
  every CUDA device) from one seed, after checking that numpy can take it.
- :func:`seed_worker` is a ``worker_init_fn`` for :class:`torch.utils.data.DataLoader`: it
  reseeds the global RNGs from the worker's seed **and** every RNG object the worker's copy of
  the dataset holds (``numpy.random.Generator``, ``numpy.random.RandomState``,
  ``random.Random``, ``torch.Generator``), however deeply nested in attributes, containers or
  transforms. Each RNG gets its own stream, derived from the worker seed and the RNG's
  attribute path, so streams differ between workers and, because the loader draws a new base
  seed per epoch, between epochs; with a seeded ``generator=`` on the loader they are also
  reproducible run to run.
- :func:`find_duplicate_samples` audits a dataset: it fetches the same items in several
  workers and epochs and counts where the random part of the samples repeats.

Importing this module changes no global state.
"""

from __future__ import annotations

import hashlib
import itertools
import pickle
import random
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

__all__ = [
    "seed_everything", "seed_worker", "reseed_rng_objects", "derive_seed",
    "DuplicateReport", "find_duplicate_samples", "fingerprint",
]

_MASK32 = 0xFFFFFFFF
_MAX_NUMPY_SEED = 2**32  # exclusive: np.random.seed accepts 0 <= seed < 2**32
_ATOMIC = (str, bytes, bytearray, int, float, complex, bool, type(None), np.ndarray,
           torch.Tensor, np.generic)
_SKIP = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
         types.MethodType, property, types.CodeType, types.FrameType)


def _check_seed(seed: Any, name: str = "seed") -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"{name} must be an integer in [0, 2**32), got {type(seed).__name__} "
                         f"{seed!r} (numpy's np.random.seed only takes such integers)")
    seed = int(seed)
    if not 0 <= seed < _MAX_NUMPY_SEED:
        raise ValueError(f"{name} must be an integer in [0, 2**32) for numpy's np.random.seed, "
                         f"got {seed}")
    return seed


def seed_everything(seed: int) -> int:
    """Seed Python's ``random``, numpy's global RNG and torch (CPU and all CUDA devices).

    The seed is validated first, so a bad seed changes nothing.

    Args:
        seed: an integer in ``[0, 2**32)`` (the range numpy's ``np.random.seed`` accepts).

    Returns:
        The seed, as a Python ``int``.

    Raises:
        ValueError: if ``seed`` is not an integer (``bool`` included) or is out of range.
    """
    seed = _check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device (lazily when CUDA is not initialised)
    return seed


def derive_seed(base_seed: int, tag: str) -> int:
    """A reproducible 64-bit seed for the stream named ``tag`` under ``base_seed``.

    Uses :class:`numpy.random.SeedSequence` with the base seed's two 32-bit halves and a
    BLAKE2 hash of ``tag`` as entropy: distinct tags or base seeds give independent streams,
    and the result does not depend on Python's per-process string hashing.

    Args:
        base_seed: a non-negative integer (e.g. ``get_worker_info().seed``, up to 64 bits).
        tag: names the stream, e.g. an attribute path such as ``"dataset.transform.rng"``.

    Returns:
        An integer in ``[0, 2**64)``.

    Raises:
        ValueError: on a negative or non-integer base seed, or a non-string tag.
    """
    if isinstance(base_seed, bool) or not isinstance(base_seed, (int, np.integer)) or base_seed < 0:
        raise ValueError(f"derive_seed: base_seed must be a non-negative integer, got {base_seed!r}")
    if not isinstance(tag, str):
        raise ValueError(f"derive_seed: tag must be a string, got {type(tag).__name__}")
    base_seed = int(base_seed)
    words = [base_seed & _MASK32, (base_seed >> 32) & _MASK32, base_seed >> 64]
    digest = hashlib.blake2b(tag.encode("utf-8"), digest_size=16).digest()
    words += [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    state = np.random.SeedSequence(words).generate_state(2, dtype=np.uint32)
    return int(state[0]) | (int(state[1]) << 32)


def _reseed_one(rng: Any, seed: int) -> bool:
    """Reseed one RNG object in place; return False if ``rng`` is not an RNG we know."""
    if isinstance(rng, np.random.Generator):
        bg = rng.bit_generator
        bg.state = type(bg)(np.random.SeedSequence(seed)).state
        return True
    if isinstance(rng, np.random.RandomState):
        bg = rng._bit_generator  # the only way to reach a non-MT19937 bit generator
        bg.state = type(bg)(np.random.SeedSequence(seed)).state
        return True
    if isinstance(rng, random.Random):  # random.SystemRandom ignores seeds, as it should
        rng.seed(seed)
        return True
    if isinstance(rng, torch.Generator):
        rng.manual_seed(seed)
        return True
    return False


def _children(obj: Any, path: str):
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield f"{path}[{key!r}]", value
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield f"{path}[{i}]", value
    else:
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            for key, value in list(attrs.items()):
                yield f"{path}.{key}", value
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if isinstance(slot, str) and slot not in ("__dict__", "__weakref__") \
                        and hasattr(obj, slot):
                    yield f"{path}.{slot}", getattr(obj, slot)


def reseed_rng_objects(obj: Any, base_seed: int, *, root: str = "dataset") -> list[str]:
    """Reseed, in place, every RNG object reachable from ``obj``.

    Walks attributes (``__dict__`` and ``__slots__``), lists, tuples and dicts depth-first,
    visiting each object once (cycles and shared objects are safe; a shared RNG is reseeded
    once, under the first path that reaches it). Modules, classes and functions are not
    entered, so RNGs stored as class attributes or module globals are not found (seed those
    explicitly). Each RNG found is reseeded with ``derive_seed(base_seed, path)``.

    Args:
        obj: the object to walk, typically a dataset.
        base_seed: the seed the streams derive from (e.g. the worker's seed).
        root: the name of ``obj`` in the returned paths.

    Returns:
        The attribute paths of the RNGs reseeded, in walk order, e.g.
        ``["dataset.rng", "dataset.transforms[0].gen"]``.

    Raises:
        ValueError: on a bad ``base_seed``.
    """
    derive_seed(base_seed, root)  # validates base_seed before anything changes
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [(root, obj)]
    while stack:
        path, current = stack.pop()
        if id(current) in seen or isinstance(current, _SKIP):
            continue
        seen.add(id(current))
        if _reseed_one(current, derive_seed(base_seed, path)):
            found.append(path)
            continue
        if isinstance(current, _ATOMIC):
            continue
        children = [(p, c) for p, c in _children(current, path) if not isinstance(c, _ATOMIC)]
        stack.extend(reversed(children))  # depth-first, in attribute order
    return found


def seed_worker(worker_id: int) -> None:
    """``worker_init_fn`` giving every worker, and every epoch, fresh reproducible RNG streams.

    In the worker it seeds ``random``, torch and numpy's global RNG from
    ``get_worker_info().seed`` (torch does so too for ``random`` and torch since 1.9, and for
    numpy with its own hash), then reseeds every RNG object held by the worker's copy of the
    dataset with :func:`reseed_rng_objects`. The loader draws a new base seed for each epoch
    (unless ``persistent_workers=True``, where workers and their RNGs live on), from its
    ``generator=`` if given, so seeding that generator makes the streams reproducible.

    Args:
        worker_id: the id the DataLoader passes to ``worker_init_fn``.

    Raises:
        RuntimeError: when called outside a DataLoader worker process.
        ValueError: when ``worker_id`` is not this worker's id.
    """
    info = get_worker_info()
    if info is None:
        raise RuntimeError("seed_worker must run inside a DataLoader worker: pass it as "
                           "DataLoader(..., num_workers>0, worker_init_fn=seed_worker); "
                           "in the main process use seed_everything or reseed_rng_objects")
    if worker_id != info.id:
        raise ValueError(f"seed_worker: worker_id {worker_id!r} is not this worker's id {info.id}")
    seed = info.seed
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(np.random.SeedSequence(derive_seed(seed, "numpy-global")).generate_state(4))
    reseed_rng_objects(info.dataset, seed)


# --------------------------------------------------------------------------- audit


def fingerprint(sample: Any) -> str:
    """A hex digest of a sample's exact content (bitwise for tensors, arrays and floats).

    Handles tensors, numpy arrays and scalars, Python scalars and strings, and nested
    lists/tuples/dicts of them; anything else is fingerprinted through ``pickle``.
    """
    h = hashlib.blake2b(digest_size=16)
    _feed(h, sample)
    return h.hexdigest()


def _feed(h: Any, x: Any) -> None:
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu().contiguous().reshape(-1)
        h.update(f"T{t.dtype}{tuple(x.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
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
        h.update(b"P" + pickle.dumps(x, protocol=4))


def _collate_fingerprints(batch: list) -> tuple[int, list[str]]:
    info = get_worker_info()
    return (-1 if info is None else info.id), [fingerprint(s) for s in batch]


@dataclass(frozen=True)
class DuplicateReport:
    """What :func:`find_duplicate_samples` found.

    ``across_workers`` counts (epoch, item, pair of workers) whose random outputs were equal;
    ``across_epochs`` counts (worker, item, pair of epochs) likewise. Both 0 means clean.
    The ``*_checked`` fields are the number of comparisons made (the denominators).
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

    @property
    def clean(self) -> bool:
        """True when no random output repeated across workers or epochs."""
        return self.across_workers == 0 and self.across_epochs == 0

    def __str__(self) -> str:
        random_items = self.items_probed - self.items_without_randomness
        head = (f"{self.items_probed} items probed ({random_items} random, "
                f"{self.items_without_randomness} without randomness), "
                f"{self.num_workers} workers x {self.epochs} epochs"
                f"{', persistent workers' if self.persistent_workers else ''}")
        if random_items == 0:
            return f"{head}: no randomness found, nothing to compare"
        verdict = "clean" if self.clean else "DUPLICATES"
        return (f"{head}: repeats across workers {self.across_workers}/"
                f"{self.across_workers_checked}, across epochs {self.across_epochs}/"
                f"{self.across_epochs_checked} -> {verdict}")


def find_duplicate_samples(dataset: Dataset, *, num_workers: int = 2, epochs: int = 2,
                           worker_init_fn: Callable[[int], None] | None = None,
                           items: int = 8, repeats: int = 4, persistent_workers: bool = False,
                           generator: torch.Generator | None = None) -> DuplicateReport:
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
        worker_init_fn: passed to the DataLoader (e.g. :func:`seed_worker`).
        items: how many items to probe (fewer if the dataset is smaller).
        repeats: fetches of each item per worker and epoch; raise it for augmentations with
            few outcomes (a coin-flip augmentation repeats by chance with 2**-repeats).
        persistent_workers: passed to the DataLoader.
        generator: passed to the DataLoader (draws the workers' base seed each epoch).

    Returns:
        A :class:`DuplicateReport`; ``str()`` of it is a one-line summary.

    Raises:
        ValueError: on bad counts or an empty dataset.
        TypeError: on an iterable-style dataset or one without ``__len__``.
        RuntimeError: if the loader did not hand one probe batch to each worker per epoch.
    """
    for name, value, minimum in (("num_workers", num_workers, 2), ("epochs", epochs, 2),
                                 ("items", items, 1), ("repeats", repeats, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"find_duplicate_samples: {name} must be an integer >= {minimum}, "
                             f"got {value!r}")
    if isinstance(dataset, IterableDataset):
        raise TypeError("find_duplicate_samples: iterable-style datasets are not supported "
                        "(their workers cannot be asked for the same items)")
    try:
        n = len(dataset)  # type: ignore[arg-type]
    except TypeError as exc:
        raise TypeError("find_duplicate_samples: dataset must be map-style with __len__, got "
                        f"{type(dataset).__name__}") from exc
    if n == 0:
        raise ValueError("find_duplicate_samples: the dataset is empty")
    if worker_init_fn is not None and not callable(worker_init_fn):
        raise ValueError("find_duplicate_samples: worker_init_fn must be callable or None")
    if not isinstance(persistent_workers, bool):
        raise ValueError("find_duplicate_samples: persistent_workers must be a bool, got "
                         f"{persistent_workers!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError("find_duplicate_samples: generator must be a torch.Generator or None, "
                         f"got {type(generator).__name__}")

    probe = sorted({int(i) for i in np.linspace(0, n - 1, min(items, n))})
    batch = probe * repeats
    loader = DataLoader(dataset, batch_sampler=[batch] * num_workers, num_workers=num_workers,
                        collate_fn=_collate_fingerprints, worker_init_fn=worker_init_fn,
                        persistent_workers=persistent_workers, generator=generator)
    # streams[epoch][worker][item] = tuple of the item's `repeats` fingerprints
    streams: list[dict[int, dict[int, tuple[str, ...]]]] = []
    for epoch in range(epochs):
        per_worker: dict[int, dict[int, tuple[str, ...]]] = {}
        for worker, prints in loader:
            if worker in per_worker or worker < 0:
                raise RuntimeError("find_duplicate_samples: the DataLoader did not give one probe "
                                   f"batch to each worker in epoch {epoch}")
            per_worker[worker] = {i: tuple(prints[k * len(probe) + j] for k in range(repeats))
                                  for j, i in enumerate(probe)}
        if sorted(per_worker) != list(range(num_workers)):
            raise RuntimeError("find_duplicate_samples: the DataLoader did not give one probe "
                               f"batch to each worker in epoch {epoch}")
        streams.append(per_worker)
    del loader  # shuts persistent workers down

    random_items = [i for i in probe
                    if any(len(set(streams[e][w][i])) > 1
                           for e in range(epochs) for w in range(num_workers))]
    worker_pairs = list(itertools.combinations(range(num_workers), 2))
    epoch_pairs = list(itertools.combinations(range(epochs), 2))
    across_workers = sum(streams[e][a][i] == streams[e][b][i]
                         for e in range(epochs) for i in random_items for a, b in worker_pairs)
    across_epochs = sum(streams[e][w][i] == streams[f][w][i]
                        for w in range(num_workers) for i in random_items for e, f in epoch_pairs)
    return DuplicateReport(
        across_workers=int(across_workers), across_epochs=int(across_epochs),
        across_workers_checked=len(random_items) * len(worker_pairs) * epochs,
        across_epochs_checked=len(random_items) * num_workers * len(epoch_pairs),
        items_probed=len(probe), items_without_randomness=len(probe) - len(random_items),
        num_workers=num_workers, epochs=epochs, repeats=repeats,
        persistent_workers=persistent_workers)
