"""Find the RNG objects an object holds, by walking its attributes and containers (chapter 01).

A DataLoader worker gets a copy of the dataset, RNG objects included; to give each worker its
own streams, :func:`tricks_helpers.seeding.seed_worker` reseeds the RNGs this walk finds.
:func:`find_rng_objects` lists them (with their attribute paths) and can ``visit`` each one;
:func:`reseed_rng` reseeds one.

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

from tricks_helpers._checks import check_callable, check_type

__all__ = ["RNGWalk", "find_rng_objects", "reseed_rng"]

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


def reseed_rng(rng: Any, seed: int) -> None:
    """Reseed one RNG object of a kind the walk finds, in place, from an integer ``seed >= 0``.

    numpy generators (and ``RandomState``) get their bit generator's state from
    ``SeedSequence(seed)``; ``random.Random`` is seeded with ``seed``, ``torch.Generator`` with
    ``manual_seed(seed)`` (so ``seed < 2**64``).
    """
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


def find_rng_objects(
    obj: Any, *, root: str = "dataset", visit: Callable[[Any, str], None] | None = None
) -> RNGWalk:
    """Find the RNG objects reachable from ``obj``; changes nothing unless ``visit`` does.

    Depth-first, in attribute and item order, through the containers and objects listed in
    the module docstring ("What the walk reaches"); each object is visited once, so cycles and
    shared objects are safe (a shared RNG is reported once, under the first path that reaches
    it). Elements of a set have no order of their own: the non-plain ones are visited sorted
    by type name (and, for RNGs, by a digest of their state), so two *different* objects of the
    same class in one set may swap paths between runs; keep such objects in a list.

    Args:
        obj: the object to walk, typically a dataset.
        root: the name of ``obj`` in the returned paths.
        visit: called as ``visit(rng, path)`` on each RNG when it is found, e.g. to reseed it
            (:func:`tricks_helpers.seeding.reseed_rng_objects` does, with :func:`reseed_rng`).

    Returns:
        An :class:`RNGWalk`, e.g. ``paths=("dataset.rng", "dataset.transforms[0].gen")``.

    Raises:
        TypeError: on a non-string ``root`` or a ``visit`` that is not callable.
    """
    check_type("find_rng_objects", "root", root, str)
    if visit is not None:
        check_callable("find_rng_objects", "visit", visit)
    return _walk(obj, root, visit)
