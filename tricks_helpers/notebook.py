"""Output hygiene for the book's notebooks (introduced in chapter 01).

- :func:`shown_warnings` prints warnings without machine paths;
- :func:`captured_logs` records what named loggers emit instead of letting them print;
- :func:`show_error` runs a call that must fail and prints its error in one stable line;
- :func:`skipped` prints the one line a section prints instead of running, when this run lacks
  what it needs (a library release, a device).

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
import dataclasses
import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from tricks_helpers._checks import check_callable, check_type
from tricks_helpers.fields import SKIPPED, check_text

__all__ = ["shown_warnings", "captured_logs", "show_error", "skipped", "SKIPPED_PREFIX"]

#: How every skipped-section line starts (runners count the lines that begin with it).
SKIPPED_PREFIX = "[skipped] "


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
    out = sys.stdout if stream is None else stream
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for category in _error_categories(sys.warnoptions):
            warnings.simplefilter("error", category)
        try:
            yield caught
        finally:  # print what was recorded even when the block raises
            _print_warnings(caught, out, dedupe)


def _print_warnings(caught: list[warnings.WarningMessage], out, dedupe: bool) -> None:
    seen = set()
    for w in caught:
        first_line = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
        key = (w.category.__name__, first_line)
        if dedupe and key in seen:
            continue
        seen.add(key)
        print(f"{w.category.__name__}: {first_line}", file=out)


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(level=logging.NOTSET)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def captured_logs(*names: str) -> Iterator[list[logging.LogRecord]]:
    """Record what the loggers ``names`` (and their children) emit inside the block.

    While the block runs, each named logger sends its records to a list instead of
    propagating them to its parents' handlers (which would print them to stderr with
    machine paths). Levels are not changed: only what the logger would have emitted is
    recorded. On exit every logger's handlers and ``propagate`` flag are restored.
    Introduced in chapter 07 (torchao logs at import time).

    Args:
        names: logger names, e.g. ``"torchao"``.

    Yields:
        The list of :class:`logging.LogRecord` objects, filled as records arrive.

    Raises:
        TypeError: when a name is not a string.
        ValueError: when no name, or an empty name (the root logger), is given.
    """
    for n in names:
        check_type("captured_logs", "name", n, str)
    if not names or any(not n for n in names):
        raise ValueError(
            "captured_logs: give one or more non-empty logger names "
            "(the root logger is not captured)"
        )
    records: list[logging.LogRecord] = []
    handler = _ListHandler(records)
    saved = []
    for name in names:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate, list(logger.handlers)))
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield records
    finally:
        for logger, propagate, handlers in saved:
            logger.handlers = handlers
            logger.propagate = propagate


def show_error(
    fn: Callable[[], Any],
    expected: type[BaseException] | tuple[type[BaseException], ...] = Exception,
    *,
    label: str = "",
    first_sentence: bool = False,
    width: int | None = None,
    stream=None,
) -> BaseException:
    """Call ``fn``, which must raise ``expected``, and print the error as one stable line.

    The line is ``[label: ]<ExceptionType>: <first line of the message>``, optionally cut at
    the first sentence (``". "``) or to ``width`` characters: messages of third-party errors
    can carry machine paths or change between versions in their later lines. Used by every
    "what the helper refuses" cell of the book.

    Args:
        fn: a function of no arguments.
        expected: the exception type(s) ``fn`` must raise.
        label: printed before the error, e.g. the case being tried.
        first_sentence: keep the message up to its first ``". "`` only.
        width: cut the message to this many characters.
        stream: where to print (default ``sys.stdout``).

    Returns:
        The exception raised, for further asserts.

    Raises:
        TypeError: on a non-callable ``fn``.
        AssertionError: when ``fn`` returns normally (the call was expected to fail).
        BaseException: an exception that is not ``expected`` propagates unchanged.
    """
    check_callable("show_error", "fn", fn)
    out = sys.stdout if stream is None else stream
    try:
        fn()
    except expected as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if first_sentence and ". " in message:
            message = message.split(". ")[0] + "."
        if width is not None and len(message) > width:
            message = message[:width]
        prefix = f"{label}: " if label else ""
        print(f"{prefix}{type(exc).__name__}: {message}", file=out)
        return exc
    names = (
        expected.__name__
        if isinstance(expected, type)
        else " or ".join(e.__name__ for e in expected)
    )
    raise AssertionError(
        f"show_error: expected {names}{f' ({label})' if label else ''}, "
        f"but the call returned normally"
    )


def skipped(section: str, needs: str, have: str, *, stream=None) -> str:
    """Print and return the one line a section shows instead of running (chapter 07 on).

    The line is ``[skipped] <section>: needs <needs>, this run has <have>``, e.g.
    ``[skipped] int4 weight-only rows: needs torchao >= 0.18, this run has torchao 0.16.0``.
    It always begins with :data:`SKIPPED_PREFIX` and is one line, so a runner can count a
    chapter's skipped sections by the lines of its outputs that begin with that prefix.

    Args:
        section: what is not run, in words (one line, not empty).
        needs: what it needs (``"torchao >= 0.18"``; one line, not empty).
        have: what this run has instead (``"torchao 0.16.0"``; one line, not empty).
        stream: where to print (default ``sys.stdout``).

    Returns:
        The line printed, without its newline.

    Raises:
        TypeError: when an argument is not a string.
        ValueError: when one is empty (or only blanks), holds a line break or another
            character of :data:`tricks_helpers.fields.FORBIDDEN`, or is longer than
            :data:`tricks_helpers.fields.SKIPPED` allows (the section 200 characters, the
            reason ``needs ..., this run has ...`` 300).
    """
    part = dataclasses.replace(SKIPPED["reason"], min_length=1)  # needs, have: not empty
    for name, value in (("section", section), ("needs", needs), ("have", have)):
        check_text("skipped", name, value, SKIPPED["section"] if name == "section" else part)
    check_text("skipped", "reason", f"needs {needs}, this run has {have}", SKIPPED["reason"])
    line = f"{SKIPPED_PREFIX}{section}: needs {needs}, this run has {have}"
    print(line, file=sys.stdout if stream is None else stream)
    return line
