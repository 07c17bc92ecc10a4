"""Output hygiene for the book's notebooks (introduced in chapter 01).

A warning printed by Python carries the path of the cell's temporary file
(``/tmp/ipykernel_<pid>/<n>.py``), which changes on every run and machine. nbval compares
stderr, so chapters show warnings through :func:`shown_warnings`, which prints the
category and message only.

The deprecation canary (``make canary``) starts the kernel with
``PYTHONWARNINGS=error::DeprecationWarning,error::FutureWarning``; :func:`shown_warnings`
honours such ``error`` options, so a deprecation it would merely print becomes an error
there, as it will on the next torch.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
import warnings
from typing import Iterator

__all__ = ["shown_warnings"]


def _error_categories(options: list[str]) -> list[type[Warning]]:
    """Warning categories that ``-W``/``PYTHONWARNINGS`` options turn into errors.

    Only the ``error::Category`` form with a built-in category is understood; other
    options are left to Python's own handling.
    """
    found = []
    for option in options:
        parts = [p.strip() for p in option.split(":")]
        if len(parts) >= 3 and parts[0] == "error" and not parts[1]:
            category = getattr(builtins, parts[2], None)
            if isinstance(category, type) and issubclass(category, Warning):
                found.append(category)
    return found


@contextlib.contextmanager
def shown_warnings(*, stream=None, dedupe: bool = True) -> Iterator[list[warnings.WarningMessage]]:
    """Record warnings raised inside the block and print them without file paths.

    Each warning is printed as ``<Category>: <message>`` (first line of the message) to
    ``stream`` (default: ``sys.stdout``, so the order with other prints is stable). The
    global warnings filters are restored on exit.

    Args:
        stream: where to print; default ``sys.stdout``.
        dedupe: print each distinct (category, message) once.

    Yields:
        The list of recorded :class:`warnings.WarningMessage` objects, for asserts.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for category in _error_categories(sys.warnoptions):
            warnings.simplefilter("error", category)
        yield caught
    out = sys.stdout if stream is None else stream
    seen = set()
    for w in caught:
        first_line = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
        key = (w.category.__name__, first_line)
        if dedupe and key in seen:
            continue
        seen.add(key)
        print(f"{w.category.__name__}: {first_line}", file=out)
