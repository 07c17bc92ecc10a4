"""The probes' one harness: each case in a forked child with a time limit, classed by outcome.

A case is ``(label, call(tmp), expect)``: ``call`` gets a fresh scratch folder, ``expect`` is
:data:`ERROR` (the right answer is an error), :class:`Raises` (the caller's own exception,
passed through) or a check of the result (:func:`equals`). The classes (:data:`CLASSES`):

- ``correct``: it returned, and the result is right (the case says what right is);
- ``clear error``: it raised a documented type whose message names the function, the argument
  or the object (each probe says which types are documented and which words name context);
- ``obscure``: it raised anything else, or a documented type with a raw message;
- ``silent wrong``: it returned where it should have refused, or returned a wrong result;
- ``crash``: the child died by a signal; ``hang``: it ran past the time limit.

Used by ``storage`` and ``inputs`` (:func:`run_cases` runs them, :func:`report` is their command
line: one line per case, then the counts; exit status 1 on silent wrong, a crash or a hang).
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CLASSES",
    "ERROR",
    "Raises",
    "equals",
    "classify_outcome",
    "run_case",
    "run_cases",
    "report",
    "probe_command",
]

CLASSES = ("clear error", "correct", "obscure", "silent wrong", "crash", "hang")
ERROR = "error"  # the case's right answer is an error


@dataclass(frozen=True)
class Raises:
    """The case's right answer is the caller's own exception ``exc``, passed through."""

    exc: type


def equals(value: Any) -> Callable[[Any], bool]:
    """The check of a case whose right result is ``value``."""
    return lambda got: got == value


def classify_outcome(
    run: Callable[[], Any],
    expect: Any,
    documented: tuple[type, ...],
    context: tuple[str, ...],
) -> tuple[str, str]:
    try:
        got = run()
        if isinstance(got, Iterator):
            got = list(got)  # an iterator: its errors come when consumed
    except BaseException as exc:
        if isinstance(expect, Raises) and type(exc) is expect.exc:
            return "correct", f"{type(exc).__name__} passed through"
        if not isinstance(exc, documented):
            return "obscure", f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:150]}"
        msg = str(exc)
        raw = not msg or msg.startswith("[Errno") or not any(w in msg for w in context)
        return ("obscure" if raw else "clear error"), f"{type(exc).__name__}: {msg[:150]}"
    if expect is ERROR or isinstance(expect, Raises):
        return "silent wrong", f"returned {got!r}"[:160]
    try:
        ok = bool(expect(got))
    except Exception as exc:  # the check itself failed: the result is not what it should be
        return "silent wrong", f"result check raised {exc!r}"[:160]
    return ("correct" if ok else "silent wrong"), ("" if ok else f"returned {got!r}"[:160])


def run_case(
    call: Callable[[Path], Any], expect: Any, timeout: float, classify: Callable
) -> tuple[str, str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the case, send its class
        os.close(read)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                outcome = classify(lambda: call(Path(tmp)), expect)
            os.write(write, json.dumps(outcome).encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return "hang", f"still running after {timeout:.0f} s"
        time.sleep(0.005)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    if os.WIFSIGNALED(status):
        return "crash", f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    if not data:
        return "crash", f"exit status {os.WEXITSTATUS(status)} without a result"
    kind, detail = json.loads(data)
    return kind, detail


def run_cases(
    cases: Iterable[tuple[str, Callable[[Path], Any], Any]],
    timeout: float,
    classify: Callable,
    only: str | None = None,
) -> list[tuple[str, str, str]]:
    """Run every case (those whose label contains ``only``); ``[(label, class, detail)]``."""
    return [
        (label, *run_case(call, expect, timeout, classify))
        for label, call, expect in cases
        if only is None or only in label
    ]


def report(rows: list[tuple[str, str, str]], width: int) -> int:
    """Print one line per case and the counts; 1 when a case is silent wrong, crashed or hung."""
    for label, kind, detail in rows:
        print(f"{kind:12s} | {label:{width}s} | {detail}")
    counts = Counter(kind for _, kind, _ in rows)
    print("counts: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in CLASSES) + f" (of {len(rows)})")
    return 1 if any(counts.get(k) for k in ("silent wrong", "crash", "hang")) else 0


Probe = Callable[..., list[tuple[str, str, str]]]


def probe_command(
    cases: Callable[[], Iterable[tuple[str, Callable[[Path], Any], Any]]],
    classify: Callable,
    timeout: float,
    width: int,
) -> tuple[Probe, Callable[[Sequence[str]], int]]:
    """A probe's ``probe(timeout=..., only=None)`` (the rows) and ``main(argv)`` (its command:
    ``argv[1]``, when given, filters the labels), the same for every probe."""

    def probe(timeout: float = timeout, only: str | None = None) -> list[tuple[str, str, str]]:
        import torch  # noqa: F401  (imported once here, not in every child)

        return run_cases(cases(), timeout, classify, only)

    def main(argv: Sequence[str]) -> int:
        return report(probe(only=argv[1] if len(argv) > 1 else None), width)

    return probe, main
