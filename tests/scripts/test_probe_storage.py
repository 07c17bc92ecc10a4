"""Tests of scripts/probes/storage.py: its classes, and a few of its cases in child processes."""

from __future__ import annotations

import os
import signal

import pytest

from scripts.probes import storage as probe
from tricks_helpers import storage


@pytest.mark.parametrize(
    "run, expect, kind",
    [
        (lambda: 3, probe.ERROR, "silent wrong"),
        (lambda: 3, lambda got: got == 4, "silent wrong"),
        (lambda: 3, lambda got: got == 3, "correct"),
        (lambda: storage.verify(None), probe.ERROR, "clear error"),
        (lambda: {}["x"], probe.ERROR, "obscure"),
        (lambda: int("x"), probe.ERROR, "obscure"),  # a ValueError naming no argument
        (lambda: 1 / 0, probe.Raises(ZeroDivisionError), "correct"),
        (lambda: iter([1, 2]), lambda got: got == [1, 2], "correct"),  # iterators consumed
    ],
)
def test_outcomes_are_classed(run, expect, kind):
    assert probe._classify_outcome(run, expect)[0] == kind


def test_crashes_and_hangs_are_caught_in_the_child(tmp_path):
    crash = probe._run_case(lambda t: os.kill(os.getpid(), signal.SIGKILL), probe.ERROR, 10)
    assert crash == ("crash", "killed by SIGKILL")
    hang = probe._run_case(lambda t: signal.pause(), probe.ERROR, 0.5)
    assert hang[0] == "hang"


def test_memmap_cases_have_no_silent_wrong_crash_or_hang():
    rows = probe.probe(only="MemmapDataset")
    kinds = {kind for _, kind, _ in rows}
    assert len(rows) > 15 and kinds <= {"clear error", "correct"}, rows
