"""Tests of tricks_helpers.ddp._processes: finding and stopping every process of a launch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

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


# Finding and stopping processes one by one (moved from tests/test_processes.py).
SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
STUBBORN = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True);"
    " time.sleep(600)",
]


def marked_env(marker: str) -> dict:
    return {**os.environ, _processes.MARKER_VARIABLE: marker}


def gone(pids, seconds=5.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(_processes._running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_processes._running(p) for p in pids)


@pytest.fixture
def started():
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:  # never leave a sleeper behind, whatever the test did
        if p.poll() is None:
            p.kill()
        p.wait()


def test_running_tells_a_live_process_from_a_zombie_and_a_missing_one(started):
    proc = subprocess.Popen(SLEEP)
    started.append(proc)
    assert _processes._running(proc.pid)
    proc.kill()
    time.sleep(0.2)  # not reaped yet: a zombie
    assert not _processes._running(proc.pid)
    proc.wait()
    assert not _processes._running(proc.pid)


def test_kill_marked_stops_exactly_the_marked_processes_even_a_stubborn_one(started):
    marker = uuid.uuid4().hex
    marked = subprocess.Popen(SLEEP, env=marked_env(marker))
    stubborn = subprocess.Popen(STUBBORN, env=marked_env(marker), stdout=subprocess.PIPE)
    other = subprocess.Popen(SLEEP, env=marked_env("another launch"))
    started += [marked, stubborn, other]
    stubborn.stdout.readline()  # its SIGTERM handler is in place
    assert sorted(_processes._marked_pids(marker)) == sorted([marked.pid, stubborn.pid])
    assert _processes.kill_marked(marker, grace=0.5) == 2
    assert marked.wait(5) == -signal.SIGTERM
    assert stubborn.wait(5) == -signal.SIGKILL, "SIGKILL after the grace period"
    assert other.poll() is None, "another launch's process is left alone"
    assert _processes.kill_marked(marker, grace=0.0) == 0


def test_terminate_tree_kills_the_launcher_and_what_it_started(started, tmp_path):
    marker = uuid.uuid4().hex
    pid_file = tmp_path / "child"
    launcher = textwrap.dedent(f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen({SLEEP!r}, start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher], env=marked_env(marker), start_new_session=True
    )
    started.append(proc)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert child in _processes._descendants(proc.pid)
    assert _processes._children_map().get(proc.pid) == [child]
    _processes.terminate_tree(proc, grace=0.2, marker=marker)
    assert proc.returncode == -signal.SIGKILL
    assert gone([child]), "the launcher's child in its own session is killed too"


def test_without_proc_nothing_is_found(monkeypatch):
    def no_proc(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(_processes.os, "listdir", no_proc)
    assert _processes._children_map() == {}
    assert _processes._marked_pids("x") == []
    assert _processes.kill_marked("x", grace=0.0) == 0
    assert not _processes._running(-1) and Path("/proc").exists()
