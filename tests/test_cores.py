"""Tests of tricks_helpers.cores: pinning cores and setting torch's thread count together."""

from __future__ import annotations

import os

import pytest
import torch

from tricks_helpers import cores


@pytest.fixture
def machine(monkeypatch):
    """A fake machine of 4 cores: affinity and thread count recorded, nothing really pinned."""
    state = {"affinity": {0, 1, 2, 3}, "threads": 4}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(state["affinity"]), raising=False)
    monkeypatch.setattr(
        os, "sched_setaffinity", lambda pid, c: state.update(affinity=set(c)), raising=False
    )
    monkeypatch.setattr(torch, "set_num_threads", lambda n: state.update(threads=n))
    monkeypatch.setattr(torch, "get_num_threads", lambda: state["threads"])
    return state


def test_use_cores_pins_and_sets_threads_together(machine, capsys):
    used = cores.use_cores(2)
    assert machine == {"affinity": {0, 1}, "threads": 2}
    assert (used.asked, used.cores, used.threads) == (2, (0, 1), 2)
    assert (used.before_cores, used.before_threads) == ((0, 1, 2, 3), 4)
    assert (
        capsys.readouterr().out == "[hardware] 2 CPU cores and 2 torch threads (of 4 available)\n"
    )


def test_use_cores_uses_what_there_is_and_says_so(machine, capsys):
    used = cores.use_cores(8)
    assert machine == {"affinity": {0, 1, 2, 3}, "threads": 4} and used.cores == (0, 1, 2, 3)
    out = capsys.readouterr().out
    assert out.startswith("[hardware] 4 CPU cores and 4 torch threads")
    assert "asked for 8 cores, this machine gives 4" in out


def test_use_cores_restores_only_when_asked(machine, capsys):
    used = cores.use_cores(1, show=False)
    assert capsys.readouterr().out == ""
    assert machine == {"affinity": {0}, "threads": 1}  # nothing restored by itself
    used.restore()
    assert machine == {"affinity": {0, 1, 2, 3}, "threads": 4}
    assert capsys.readouterr().out == "cores and threads restored: True\n"


def test_use_cores_without_pinning_sets_threads_only(machine, monkeypatch, capsys):
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    used = cores.use_cores(8)
    assert used.cores == () and used.threads == 3 and machine["threads"] == 3
    out = capsys.readouterr().out
    assert (
        out == "[hardware] cores not pinned and 3 torch threads "
        "(this OS cannot pin a process to cores)\n"
    )
    used.restore(show=False)
    assert machine["threads"] == 4


@pytest.mark.parametrize(
    "n, kw, error, match",
    [
        (0, {}, ValueError, "n"),
        (-2, {}, ValueError, "n"),
        (2.0, {}, TypeError, "n"),
        ("2", {}, TypeError, "n"),
        (True, {}, TypeError, "n"),
        (2, {"show": "yes"}, TypeError, "show"),
    ],
)
def test_use_cores_rejects_bad_input(machine, n, kw, error, match):
    with pytest.raises(error, match=match):
        cores.use_cores(n, **kw)
    assert machine == {"affinity": {0, 1, 2, 3}, "threads": 4}  # nothing changed


def test_use_cores_on_this_machine_really_pins_and_restores():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("this OS cannot pin a process to cores")
    before, threads = os.sched_getaffinity(0), torch.get_num_threads()
    used = cores.use_cores(1, show=False)
    try:
        assert len(os.sched_getaffinity(0)) == 1 and torch.get_num_threads() == 1
    finally:
        used.restore(show=False)
    assert os.sched_getaffinity(0) == before and torch.get_num_threads() == threads
