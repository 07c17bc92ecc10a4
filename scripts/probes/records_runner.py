"""Cases of :mod:`scripts.probes.records`: the results files, the runner's early checks, ddp.

The results schema and the contributed-file check (a ratio its times contradict, 10,000
records, invisible characters, a repeated key, a link), a compat entry's error line, the checks
``run_notebooks`` makes before any chapter runs, and ``python -m tricks_helpers.ddp``'s bounded
waits and early checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scripts.probes.harness import ERROR
from scripts.probes.records_fields import comparison


def _results(n: int = 1) -> dict:
    from scripts.book import machine_records

    facts = machine_records.machine_facts(
        cpu="Probe CPU", flags=frozenset({"avx2"}), environ={}, threads=2, gpu="none", arch="x86_64"
    )
    records = [comparison(f"row {i}").record(chapter="01_x") for i in range(n)]
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    return machine_records.merge_results(None, facts, {"01_x": ok}, records, "survey")


def _check(change: Callable[[dict], Any]) -> Any:
    from scripts.results import schema

    data = _results()
    change(data)
    return schema.check_results(data, "probe-survey.json")


def _check_file(t: Path, text: Callable[[dict], str], link: bool = False) -> Any:
    from scripts.results import check, schema

    data = _results()
    name = schema.file_name(data["machine"]["id"], "survey")
    target = t / ("real.json" if link else name)
    target.write_text(text(data), encoding="utf-8")
    if link:
        (t / name).symlink_to(target)
    return check.check_file(t / name, contributed=True)


def _before(t: Path, kind: str) -> Any:
    from scripts.book import machine_records, run_notebooks

    machine = machine_records.machine_facts()
    paths = [t / "book" / "01_a.ipynb"]
    results = t / "results"
    if kind == "results is a file":
        results.write_text("x")
    elif kind == "previous file not JSON":
        results.mkdir()
        machine_records.results_path(results, machine["id"], "survey").write_text("{")
    elif kind == "two notebooks, one stem":
        paths.append(t / "extra" / "01_a.ipynb")
    elif kind == "a stem with a space":
        paths = [t / "book" / "01 a.ipynb"]
    return run_notebooks.check_before_running(paths, "survey", results, machine)


def _ddp(t: Path, *argv: str, env: dict | None = None) -> Any:
    """``python -m tricks_helpers.ddp ...``: its last stderr line as an error, or its status."""
    full = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "tricks_helpers.ddp", *argv, "--out", str(t)],
        capture_output=True,
        text=True,
        env=full,
        timeout=110,
    )
    if done.returncode:
        lines = done.stderr.strip().splitlines() or ["(nothing on stderr)"]
        raise RuntimeError(lines[-1])
    return done.returncode


def runner_cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """``(label, call(tmp), expect)``: ``expect`` is ERROR or a check of the result."""
    from scripts.compat import outcome as compat_outcome

    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    add = c.append
    # ---- the results schema and the contributed-file check
    add(
        (
            "check_results ratio 1e300, times 0.91x",
            lambda t: _check(
                lambda d: d["records"][0].update(
                    ratio=1e300, lo=1e300, hi=1e300, baseline_s=9.1e-4, trick_s=1e-3
                )
            ),
            ERROR,
        )
    )
    add(
        (
            "check_results ratio 2, times 0.91x",
            lambda t: _check(lambda d: d["records"][0].update(baseline_s=9.1e-4, trick_s=1e-3)),
            ERROR,
        )
    )
    add(
        (
            "check_results 10,000 records",
            lambda t: _check(lambda d: d.update(records=d["records"] * 10_000)),
            ERROR,
        )
    )
    add(
        (
            "check_results label zero-width",
            lambda t: _check(lambda d: d["records"][0].update(label="a\u200bb")),
            ERROR,
        )
    )
    add(
        (
            "check_results cpu bidi",
            lambda t: _check(lambda d: d["machine"].update(cpu="Intel\u202eDMA")),
            ERROR,
        )
    )
    add(("check_results good", lambda t: _check(lambda d: None), bool))
    add(
        (
            "check_file repeated key",
            partial(
                _check_file,
                text=lambda d: json.dumps(d).replace(
                    '"source": "survey"', '"source": "survey", "source": "book"'
                ),
            ),
            ERROR,
        )
    )
    add(("check_file a link", partial(_check_file, text=json.dumps, link=True), ERROR))
    add(("check_file good", partial(_check_file, text=json.dumps), bool))
    err = "RuntimeError:\tbad\u202e"
    add(
        (
            "compat entry error with a tab",
            lambda t: compat_outcome.entry(None, 1.0, err, "2026-01-01", "abc")["error"],
            "RuntimeError: bad".__eq__,
        )
    )
    # ---- the runner's checks before any chapter runs
    for kind in (
        "results is a file",
        "previous file not JSON",
        "two notebooks, one stem",
        "a stem with a space",
    ):
        add((f"run_notebooks {kind}", partial(_before, kind=kind), ERROR))
    add(
        (
            "run_notebooks fine",
            partial(_before, kind="fine"),
            lambda got: list(got.values()) == [None],
        )
    )
    # ---- python -m tricks_helpers.ddp: bounded waits, early checks
    missing_rank = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29517"}
    add(
        (
            "ddp a missing rank, --timeout 2",
            lambda t: _ddp(t, "shard", "--variant", "ddp", "--timeout", "2", env=missing_rank),
            ERROR,
        )
    )
    add(
        (
            "ddp --backend nccl on a CPU host",
            lambda t: _ddp(t, "train", "--variant", "x", "--backend", "nccl"),
            ERROR,
        )
    )
    for opt, value in (
        ("--seed", str(2**70)),
        ("--seed", "-1"),
        ("--workers", "0"),
        ("--epochs", "0"),
    ):
        add(
            (
                f"ddp seeding {opt} {value[:6]}",
                lambda t, o=opt, v=value: _ddp(
                    t, "seeding", "--seeding", "alike", "--mp-context", "fork", o, v
                ),
                ERROR,
            )
        )
    add(
        (
            "ddp shard --timeout nan",
            lambda t: _ddp(t, "shard", "--variant", "ddp", "--timeout", "nan"),
            ERROR,
        )
    )
    return c
