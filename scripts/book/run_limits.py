"""The machine's one set of limits during a book run (issue 39): measured once before the first
chapter, never lowered below what the machine's results file recorded, handed to every chapter
(``tricks_helpers.limits.machine_limits`` reads it through ``LIMITS_ENV``) and raised after each
chapter to the fastest rate it held against a limit."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scripts.book.chapter_run import Outcome
from scripts.book.machine_records import limits_record, results_path
from tricks_helpers.limits import LIMITS_ENV, PROBE_VERSION


def _measure_limits() -> Any:
    from tricks_helpers.limits import measure_limits

    return measure_limits()


def run_limits(
    old: Mapping[str, Any] | None,
    name: str,
    measure: Callable[[], Any] | None = None,
    *,
    probe: bool = True,
) -> dict[str, Any]:
    """The machine's one set of limits for a run, handed to every chapter.

    ``old`` is the machine's results file as the runner read it, once, before the first chapter
    (None where there is none); ``name`` its file name, for the printed lines. Where ``old``
    recorded limits of this probe (``probe`` = ``tricks_helpers.limits.PROBE_VERSION``), each
    limit is the higher of the recorded one and a new probe's (``measure``, default
    ``measure_limits``, once before the first chapter; a limit is the highest rate observed on
    the machine: a probe measured on a loaded machine never lowers it), with the chapters'
    observed rates kept. With ``probe=False`` (a run of some chapters) a recorded set is handed
    as it is, so that the chapters the run leaves alone still print the machine's limits; the
    probe runs only where nothing of this probe is recorded."""
    recorded = (old or {}).get("limits")
    if not probe and recorded is not None and recorded.get("probe") == PROBE_VERSION:
        print(f"limits: recorded in {name} (a run of some chapters: no new probe)")
        return {**recorded}
    print("limits: measuring this machine's (every chapter reads this one set) ...", flush=True)
    new = limits_record((measure or _measure_limits)())
    if recorded is None or recorded.get("probe") != PROBE_VERSION:
        return new
    out = {**recorded, "matmul": dict(recorded["matmul"]), "where": dict(recorded.get("where", {}))}
    out["bandwidth"] = max(recorded["bandwidth"], new["bandwidth"])
    for dtype, rate in new["matmul"].items():
        if rate > out["matmul"].get(dtype, 0.0):
            out["matmul"][dtype], out["where"][dtype] = rate, new["where"].get(dtype, "")
    out["skipped"] = {k: v for k, v in new["skipped"].items() if k not in out["matmul"]}
    raised = [k for k in ("bandwidth", *out["matmul"]) if _limit(out, k) > _limit(recorded, k)]
    print(f"limits: recorded in {name}; raised by the new probe: {raised or 'none'}")
    return out


def _limit(limits: Mapping[str, Any], name: str) -> float:
    return limits["bandwidth"] if name == "bandwidth" else limits["matmul"].get(name, 0.0)


def raise_limits(
    limits: Mapping[str, Any] | None, outcomes: list[Outcome]
) -> dict[str, Any] | None:
    """``limits`` with each chapter's rates (:attr:`Outcome.rates`) in ``observed`` and each
    limit raised to the fastest rate any chapter held against it: a limit is the highest rate
    observed on the machine. A raise is printed (the chapters that printed the old value must
    be executed again to print the new one)."""
    if limits is None:
        return None
    out = {**limits, "matmul": dict(limits["matmul"]), "where": dict(limits.get("where", {}))}
    observed = {k: dict(v) for k, v in limits.get("observed", {}).items()}
    for outcome in outcomes:
        if outcome.rates:
            observed[outcome.stem] = {k: float(v) for k, v in sorted(outcome.rates.items())}
        elif outcome.ok:
            observed.pop(outcome.stem, None)
    for chapter, rates in sorted(observed.items()):
        for name, rate in rates.items():
            now = out["bandwidth"] if name == "bandwidth" else out["matmul"].get(name)
            if now is None or rate <= now:
                continue
            print(f"limits: {name} raised by {chapter} ({rate / now:.3g}x the recorded one)")
            if name == "bandwidth":
                out["bandwidth"] = rate
            else:
                out["matmul"][name], out["where"][name] = rate, chapter
    if observed:
        out["observed"] = dict(sorted(observed.items()))
    return out


class LimitsHanded:
    """While running: ``LIMITS_ENV`` names a file holding ``limits`` (and the results file they
    belong to), so that every chapter's ``machine_limits`` returns this one set."""

    def __init__(self, limits: Mapping[str, Any] | None, machine: Any, source: str) -> None:
        self.limits = None if limits is None else dict(limits)
        self.file = ""
        if machine is not None:
            self.file = results_path(Path("results"), machine["id"], source).as_posix()
        self.tmp: Any = None
        self.old: str | None = None

    def update(self, outcome: Outcome) -> None:
        """Raise the handed set to ``outcome``'s rates (:func:`raise_limits`): the chapters
        after it read the raised set."""
        self.limits = raise_limits(self.limits, [outcome])
        if self.tmp is not None:
            path = Path(self.tmp.name) / "limits.json"
            data = {"file": self.file, "limits": self.limits}
            path.write_text(json.dumps(data), encoding="utf-8")

    def __enter__(self) -> LimitsHanded:
        if self.limits is None:
            return self
        self.tmp = tempfile.TemporaryDirectory(prefix="limits-")
        path = Path(self.tmp.name) / "limits.json"
        path.write_text(json.dumps({"file": self.file, "limits": self.limits}), encoding="utf-8")
        self.old = os.environ.get(LIMITS_ENV)
        os.environ[LIMITS_ENV] = str(path)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.tmp is None:
            return
        if self.old is None:
            os.environ.pop(LIMITS_ENV, None)
        else:
            os.environ[LIMITS_ENV] = self.old
        self.tmp.cleanup()
