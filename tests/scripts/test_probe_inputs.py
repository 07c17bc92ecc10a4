"""Tests of scripts/probes/inputs.py: a few of its cases, in child processes (issue 32)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def probe_rows(only: str) -> list[tuple[str, str, str]]:
    """``probe_inputs.probe(only=...)`` in a fresh interpreter.

    The probe forks a child per case; forked from this pytest process, whose earlier tests
    started torch's OpenMP thread pool, a child that runs a parallel torch op can wait forever
    on the pool's threads, which fork did not copy (seen: a 120 s "hang" in the full suite only).
    """
    code = "import json\nfrom scripts.probes import inputs\n"
    code += f"print(json.dumps(inputs.probe(only={only!r})))"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


@pytest.mark.parametrize("only", ["params_max_diff", "Limits", "host_reads", "machine_facts"])
def test_cases_have_no_silent_wrong_crash_or_hang(only):
    rows = probe_rows(only)
    kinds = {kind for _, kind, _ in rows}
    assert len(rows) >= 4 and kinds <= {"clear error", "correct"}, rows


def test_a_checkpoint_case_is_classed_clear_error():
    rows = probe_rows("load_checkpoint without python_rng")
    assert [kind for _, kind, _ in rows] == ["clear error"], rows
