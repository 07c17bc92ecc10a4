"""Tests of tricks_helpers.ddp._processes: finding and stopping every process of a launch."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from tricks_helpers.ddp import _processes

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the cleanup reads /proc: complete on Linux only"
)

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
# a parent that starts a sleeping child in a session of its own, prints its pid, then sleeps
PARENT = [
    sys.executable,
    "-c",
    "import subprocess, sys, time\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
    " start_new_session=True)\n"
    "print(c.pid, flush=True)\n"
    "time.sleep(600)",
]


def _env(marker: str) -> dict[str, str]:
    return {**os.environ, _processes.MARKER_VARIABLE: marker}


def _wait_gone(pids: list[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(_processes._running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_processes._running(p) for p in pids)


def test_kill_marked_stops_only_the_marked_processes():
    marker = uuid.uuid4().hex
    marked = [subprocess.Popen(SLEEPER, env=_env(marker)) for _ in range(2)]
    bystander = subprocess.Popen(SLEEPER, env=_env(uuid.uuid4().hex))
    try:
        deadline = time.monotonic() + 10
        while len(_processes._marked_pids(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(_processes._marked_pids(marker)) == sorted(p.pid for p in marked)
        assert _processes.kill_marked(marker, grace=2.0) == 2
        for p in marked:
            p.wait(timeout=5)
        assert _processes._marked_pids(marker) == []
        assert bystander.poll() is None
        assert _processes.kill_marked(marker, grace=0.0) == 0  # nothing left: nothing counted
    finally:
        bystander.kill()
        bystander.wait()
        for p in marked:
            p.kill()
            p.wait()


def test_terminate_tree_reaches_a_child_in_its_own_session():
    marker = uuid.uuid4().hex
    proc = subprocess.Popen(
        PARENT, env=_env(marker), stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    child = int(proc.stdout.readline())
    try:
        assert child in _processes._descendants(proc.pid)
        _processes.terminate_tree(proc, 1.0, marker)
        assert proc.returncode is not None
        assert _wait_gone([child])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_running_is_false_for_a_zombie_and_a_missing_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while _processes._running(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes._running(proc.pid)  # exited, not yet reaped: a zombie
    proc.wait()
    assert not _processes._running(proc.pid)
    assert _processes._running(os.getpid())
