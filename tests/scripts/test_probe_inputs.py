"""Tests of scripts/probe_inputs.py: a few of its cases, in child processes (issue 32)."""

from __future__ import annotations

import pytest

import probe_inputs as probe  # scripts/ is on pytest's pythonpath (pyproject.toml)


@pytest.mark.parametrize("only", ["params_max_diff", "Limits", "host_reads", "machine_facts"])
def test_cases_have_no_silent_wrong_crash_or_hang(only):
    rows = probe.probe(only=only)
    kinds = {kind for _, kind, _ in rows}
    assert len(rows) >= 4 and kinds <= {"clear error", "correct"}, rows


def test_a_checkpoint_case_is_classed_clear_error():
    rows = probe.probe(only="load_checkpoint without python_rng")
    assert [kind for _, kind, _ in rows] == ["clear error"], rows
