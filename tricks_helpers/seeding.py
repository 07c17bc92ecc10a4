"""Seeding, and reseeding the RNG objects a DataLoader worker copied (introduced in chapter 01).

- :func:`seed_everything` seeds Python's ``random``, numpy's global RNG and torch (CPU and
  every CUDA device) from one seed, after checking that numpy can take it.
- :func:`seed_worker` is a ``worker_init_fn`` for :class:`torch.utils.data.DataLoader`: it
  reseeds the global RNGs from the worker's seed **and** the RNG objects the worker's copy of
  the dataset holds, found by :func:`find_rng_objects`. Each RNG gets its own stream, derived
  from the worker seed and the RNG's path (:func:`derive_seed`), so streams differ between
  workers and, because the loader draws a new base seed per epoch, between epochs; with a
  seeded ``generator=`` on the loader they are also reproducible run to run.
  :func:`worker_seeding` tells, inside a worker, what it did.

**What the walk reaches.** RNG objects are ``numpy.random.Generator``, ``RandomState`` and
bare ``BitGenerator``\\ s, ``random.Random`` (not ``SystemRandom``, which takes no seed) and
``torch.Generator``. They are found through: instance attributes (``__dict__`` and
``__slots__``); the items of lists, tuples, deques, sets and frozensets; the *values* of
dicts; the elements of numpy object arrays; ``functools.partial`` objects (function, arguments,
keywords); bound methods (their ``__self__``, e.g. ``self.draw = rng.normal``); and plain Python
functions (closure cells and default arguments). It does **not** enter modules, classes
(so class attributes and module globals are not reached), dict keys, generators, iterators,
or C objects without ``__dict__``; seed those yourself in a ``worker_init_fn``. Plain data
(strings, bytes, numbers, tensors, numeric arrays, paths, dates, and tuples of such) is skipped
without a look inside, which keeps the walk cheap on datasets holding long lists of
``(path, label)`` samples.

The audit that shows the bug and the fix,
:func:`~tricks_helpers.seeding_audit.find_duplicate_samples`, lives in
:mod:`tricks_helpers.seeding_audit` and is re-exported here.

Importing this module changes no global state.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import functools
import hashlib
import itertools
import numbers
import pathlib
import random
import types
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

from tricks_helpers._checks import check_int, check_type

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


# --------------------------------------------------------------------------- the walk

#: Exact types that never hold an RNG: skipped with one set lookup (the hot path).
_PLAIN = frozenset(
    {
        str,
        bytes,
        bytearray,
        int,
        float,
        complex,
        bool,
        type(None),
        range,
        slice,
        np.float64,
        np.float32,
        np.int64,
        np.int32,
        np.bool_,
        np.str_,
        pathlib.PosixPath,
        pathlib.WindowsPath,
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
    }
)
#: Base classes of plain data: not entered (numpy arrays are entered only with dtype object).
_LEAF = (
    str,
    bytes,
    bytearray,
    numbers.Number,
    range,
    slice,
    memoryview,
    torch.Tensor,
    np.generic,
    np.random.SeedSequence,
    torch.dtype,
    torch.device,
    pathlib.PurePath,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.tzinfo,
    decimal.Decimal,
    uuid.UUID,
    enum.Enum,
    random.SystemRandom,
)
#: Not entered at all: what they reach is code and module state, not the dataset's data.
_OPAQUE = (
    types.ModuleType,
    type,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    property,
    staticmethod,
    classmethod,
)

_ROOT, _ATTR, _KEY, _INDEX, _SET, _FLAT = range(6)


def _plain(x: Any) -> bool:
    t = type(x)
    return t in _PLAIN or (t is tuple and _PLAIN.issuperset(map(type, x)))


def _all_plain(values: list) -> bool:
    """``all(map(_plain, values))``, in a few C-level passes (100k samples: milliseconds)."""
    kinds = set(map(type, values))
    extra = kinds - _PLAIN
    if not extra:
        return True
    if extra != {tuple}:
        return False
    tuples = values if len(kinds) == 1 else [v for v in values if type(v) is tuple]
    return _PLAIN.issuperset(map(type, itertools.chain.from_iterable(tuples)))


def _is_rng(x: Any) -> bool:
    return isinstance(
        x, (np.random.Generator, np.random.RandomState, np.random.BitGenerator, torch.Generator)
    ) or (isinstance(x, random.Random) and not isinstance(x, random.SystemRandom))


def _reseed_one(rng: Any, seed: int) -> None:
    if isinstance(rng, (np.random.Generator, np.random.RandomState)):
        # RandomState: _bit_generator is the only way to reach a non-MT19937 bit generator
        rng = rng.bit_generator if isinstance(rng, np.random.Generator) else rng._bit_generator
    if isinstance(rng, np.random.BitGenerator):
        rng.state = type(rng)(np.random.SeedSequence(seed)).state
    elif isinstance(rng, random.Random):
        rng.seed(seed)
    else:
        rng.manual_seed(seed)


def _state_key(rng: Any) -> str:
    """A digest of an RNG's state: a stable order for RNGs found in a set."""
    if isinstance(rng, torch.Generator):
        raw = rng.get_state().numpy().tobytes()
    elif isinstance(rng, random.Random):
        raw = repr(rng.getstate()).encode()
    else:
        bg = (
            rng
            if isinstance(rng, np.random.BitGenerator)
            else getattr(rng, "bit_generator", None) or rng._bit_generator
        )
        raw = repr(bg.state).encode()
    return hashlib.blake2b(raw, digest_size=8).hexdigest()


def _set_order(x: Any) -> tuple[str, str]:
    t = type(x)
    return (f"{t.__module__}.{t.__qualname__}", _state_key(x) if _is_rng(x) else "")


def _slots(obj: Any) -> list[tuple[str, str]]:
    """(name shown in paths, attribute name) of every slot, private names mangled."""
    names = []
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else list(slots):
            if name in ("__dict__", "__weakref__"):
                continue
            private = name.startswith("__") and not name.endswith("__")
            names.append((name, f"_{cls.__name__.lstrip('_')}{name}" if private else name))
    return names


def _children(obj: Any, entry: tuple) -> tuple[list[tuple], int]:
    """The entries of ``obj``'s children that may hold an RNG, and how many were plain."""
    if isinstance(obj, (list, tuple, deque, set, frozenset, dict, np.ndarray)):
        values = list(
            obj.values()
            if isinstance(obj, dict)
            else obj.ravel()
            if isinstance(obj, np.ndarray)
            else obj
        )
        if _all_plain(values):
            return [], len(values)
        if isinstance(obj, dict):
            kids = [(v, entry, _KEY, k) for k, v in obj.items() if not _plain(v)]
        elif isinstance(obj, (set, frozenset)):
            rest = sorted((v for v in values if not _plain(v)), key=_set_order)
            kids = [(v, entry, _SET, i) for i, v in enumerate(rest)]
        elif isinstance(obj, np.ndarray):  # object dtype only (see _walk)
            kids = [
                (v, entry, _FLAT, (i, obj.shape)) for i, v in enumerate(values) if not _plain(v)
            ]
        else:
            kids = [(v, entry, _INDEX, i) for i, v in enumerate(values) if not _plain(v)]
        return kids, len(values) - len(kids)
    named: list[tuple[str, Any]] = []
    if isinstance(obj, functools.partial):
        named += [("func", obj.func), ("args", obj.args), ("keywords", obj.keywords)]
    elif isinstance(obj, (types.MethodType, types.BuiltinMethodType)):
        owner = getattr(obj, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            named.append(("__self__", owner))
    elif isinstance(obj, types.FunctionType):
        if obj.__defaults__:
            named.append(("__defaults__", obj.__defaults__))
        if obj.__kwdefaults__:
            named.append(("__kwdefaults__", obj.__kwdefaults__))
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                named.append((f"<closure {name}>", cell.cell_contents))
            except ValueError:  # an empty cell
                pass
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        attrs = None
    if isinstance(attrs, dict):
        named += list(attrs.items())
    for shown, attribute in _slots(obj):
        try:
            named.append((shown, object.__getattribute__(obj, attribute)))
        except (AttributeError, TypeError):  # an unset slot
            pass
    kids = [(v, entry, _ATTR, k) for k, v in named if not _plain(v)]
    return kids, len(named) - len(kids)


def _path(entry: tuple) -> str:
    parts = []
    while entry is not None:
        _, parent, kind, key = entry
        if kind == _ROOT:
            parts.append(key)
        elif kind == _ATTR:
            parts.append(f".{key}")
        elif kind == _KEY:
            parts.append(f"[{key!r}]")
        elif kind == _INDEX:
            parts.append(f"[{key}]")
        elif kind == _SET:
            parts.append(f"{{{key}}}")
        else:
            index = np.unravel_index(key[0], key[1])
            parts.append(f"[{', '.join(str(int(i)) for i in index)}]")
        entry = parent
    return "".join(reversed(parts))


@dataclass(frozen=True)
class RNGWalk:
    """What a walk over an object found (see :func:`find_rng_objects`).

    ``paths`` names the RNG objects found, in walk order; ``entered`` counts the objects whose
    contents were looked at (the dataset, containers, attribute holders); ``skipped`` counts
    the values passed over without a look inside: plain values and tuples of them, numeric
    arrays, tensors, and what is not entered (modules, classes...).
    """

    paths: tuple[str, ...]
    entered: int
    skipped: int


def _walk(obj: Any, root: str, visit: Callable[[Any, str], None] | None) -> RNGWalk:
    check_type("find_rng_objects", "root", root, str)
    found: list[str] = []
    seen: dict[int, Any] = {}  # id -> object: keeps each object alive, so no id is reused
    entered = skipped = 0
    stack: list[tuple] = [(obj, None, _ROOT, root)]
    while stack:
        entry = stack.pop()
        current = entry[0]
        if id(current) in seen or _plain(current):
            continue
        seen[id(current)] = current
        if _is_rng(current):
            path = _path(entry)
            found.append(path)
            if visit is not None:
                visit(current, path)
            inner = getattr(current, "bit_generator", None) or getattr(
                current, "_bit_generator", None
            )
            if inner is not None:
                seen[id(inner)] = inner  # the same bit generator reached directly: reseeded once
            continue
        if (
            isinstance(current, _LEAF)
            or isinstance(current, _OPAQUE)
            or (isinstance(current, np.ndarray) and not current.dtype.hasobject)
        ):
            skipped += 1
            continue
        kids, plain = _children(current, entry)
        entered += 1
        skipped += plain
        stack.extend(reversed(kids))  # depth-first, in attribute order
    return RNGWalk(paths=tuple(found), entered=entered, skipped=skipped)


def find_rng_objects(obj: Any, *, root: str = "dataset") -> RNGWalk:
    """Find the RNG objects reachable from ``obj``, without changing them.

    Depth-first, in attribute and item order, through the containers and objects listed in
    the module docstring ("What the walk reaches"); each object is visited once, so cycles and
    shared objects are safe (a shared RNG is reported once, under the first path that reaches
    it). Elements of a set have no order of their own: the non-plain ones are visited sorted
    by type name (and, for RNGs, by a digest of their state), so two *different* objects of the
    same class in one set may swap paths between runs; keep such objects in a list.

    Args:
        obj: the object to walk, typically a dataset.
        root: the name of ``obj`` in the returned paths.

    Returns:
        An :class:`RNGWalk`, e.g. ``paths=("dataset.rng", "dataset.transforms[0].gen")``.

    Raises:
        TypeError: on a non-string ``root``.
    """
    return _walk(obj, root, None)


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
    walk = _walk(obj, root, lambda rng, path: _reseed_one(rng, derive_seed(base_seed, path)))
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
    dataset with :func:`reseed_rng_objects` (see "What the walk reaches" in the module
    docstring). The loader draws a new base seed for each epoch (unless
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


from tricks_helpers.seeding_audit import DuplicateReport, find_duplicate_samples, fingerprint  # noqa: E402
