"""Argument validation shared by every module of the package (private).

One exception policy for the whole package:

- an argument of the wrong **type** raises :class:`TypeError`
  (``bool`` is not accepted where an integer or a number is expected);
- an argument of the right type with a wrong **value** (out of range, NaN, unknown choice,
  a model in the wrong mode) raises :class:`ValueError`;
- damaged data found by a reader raises the reader's own error (e.g.
  :class:`tricks_helpers.storage.CorruptRecordError`, a :class:`ValueError`).

Messages start with the public function's name and say what was expected and what came:
``"run_steps: batch_size must be an integer >= 1, got 0"``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Collection, Sequence
from typing import Any

__all__ = [
    "check_int",
    "check_number",
    "check_callable",
    "check_type",
    "check_choice",
    "check_bool",
    "check_names",
]


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def check_int(
    where: str, name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer in ``[minimum, maximum]``.

    Any integral type is accepted (``int``, ``numpy.int64``...), ``bool`` is not.

    Raises:
        TypeError: when ``value`` is not an integer.
        ValueError: when it is outside the bounds.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{_prefix(where)}{name} must be an integer, got {type(value).__name__} {value!r}"
        )
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if minimum is not None and maximum is not None:
            bound = f"in [{minimum}, {maximum}]"
        elif minimum is not None:
            bound = f">= {minimum}"
        else:
            bound = f"<= {maximum}"
        raise ValueError(f"{_prefix(where)}{name} must be an integer {bound}, got {value!r}")
    return value


def check_number(
    where: str,
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_minimum: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a ``float`` after checking it is a real number within bounds.

    NaN is always refused; infinities only with ``allow_inf``.

    Args:
        strict_minimum: require ``value > minimum`` instead of ``>=``.

    Raises:
        TypeError: when ``value`` is not a real number (``bool`` included).
        ValueError: on NaN, an infinity not allowed, or a value outside the bounds.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{_prefix(where)}{name} must be a number, got {type(value).__name__} {value!r}"
        )
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{_prefix(where)}{name} must be a finite number, got {value!r}")
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        op = ">" if strict_minimum else ">="
        raise ValueError(f"{_prefix(where)}{name} must be {op} {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{_prefix(where)}{name} must be <= {maximum}, got {value!r}")
    return value


def check_callable(where: str, name: str, value: Any) -> Callable[..., Any]:
    """Return ``value`` after checking it is callable.

    Raises:
        TypeError: when it is not.
    """
    if not callable(value):
        raise TypeError(f"{_prefix(where)}{name} must be callable, got {type(value).__name__}")
    return value


def check_type(where: str, name: str, value: Any, types: type | tuple[type, ...]) -> Any:
    """Return ``value`` after checking ``isinstance(value, types)``.

    Raises:
        TypeError: when it is not an instance of ``types``.
    """
    if not isinstance(value, types):
        names = (types,) if isinstance(types, type) else types
        expected = " or ".join(t.__name__ for t in names)
        raise TypeError(f"{_prefix(where)}{name} must be {expected}, got {type(value).__name__}")
    return value


def check_bool(where: str, name: str, value: Any) -> bool:
    """Return ``value`` after checking it is a ``bool`` (not merely truthy, e.g. ``"no"``).

    Raises:
        TypeError: when it is not a ``bool``.
    """
    if not isinstance(value, bool):
        raise TypeError(
            f"{_prefix(where)}{name} must be True or False, got {type(value).__name__} {value!r}"
        )
    return value


def check_choice(where: str, name: str, value: Any, choices: Collection[Any]) -> Any:
    """Return ``value`` after checking it is one of ``choices``.

    Raises:
        ValueError: when it is not (the message lists the choices).
    """
    try:
        ok = value in choices
    except TypeError:  # unhashable value against a set
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{_prefix(where)}{name} must be one of {listed}; got {value!r}")
    return value


def check_names(where: str, names: Any) -> None:
    """Check ``names`` is a non-empty sequence of strings (and not one string).

    Raises:
        TypeError: ``names`` is one string, not a sequence, or holds a non-string.
        ValueError: ``names`` is empty.
    """
    if isinstance(names, (str, bytes)):
        raise TypeError(
            f"{where}: names must be a sequence of range names such as [{names!r}], not one string"
        )
    check_type(where, "names", names, Sequence)
    if not names:
        raise ValueError(f"{where}: names must be a non-empty sequence of range names")
    for i, name in enumerate(names):
        check_type(where, f"names[{i}]", name, str)
