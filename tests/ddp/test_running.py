"""Tests of tricks_helpers.ddp.running: torchrun launches, failures, timeouts, cleanup.

The command line itself: tests/ddp/test_cli.py.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tricks_helpers import ddp

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="process-tree cleanup is checked through /proc"
)

WORKER = textwrap.dedent("""
    import os, signal, sys, time, traceback
    rank = int(os.environ["RANK"])
    mode, pid_dir = sys.argv[1], sys.argv[2]
    (open(os.path.join(pid_dir, f"pid{rank}"), "w")).write(str(os.getpid()))
    print(f"out of rank {rank} of {os.environ['WORLD_SIZE']}", flush=True)
    print(f"err of rank {rank}", file=sys.stderr, flush=True)
    if mode == "raise" and rank == 1:
        try:
            raise ValueError("planted failure on rank 1")
        except ValueError:
            traceback.print_exc()
            sys.exit(3)
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # only SIGKILL can stop this worker
        time.sleep(600)
    if mode == "orphan":
        # a background process the worker starts and never waits for, in its own session
        # (start_new_session) or in the worker's: both must be gone after a successful launch
        import subprocess
        for name, new_session in (("a", False), ("b", True)):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                     start_new_session=new_session)
            open(os.path.join(pid_dir, f"child{rank}{name}"), "w").write(str(child.pid))
""")


@pytest.fixture
def worker(tmp_path: Path) -> tuple[Path, Path]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    return script, pid_dir


def _alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _worker_pids(pid_dir: Path, prefix: str = "pid") -> list[int]:
    return [int(p.read_text()) for p in sorted(pid_dir.glob(f"{prefix}*"))]


def _wait_gone(pids: list[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(_alive(p) for p in pids)


@pytest.fixture
def no_popen(monkeypatch):
    """Fail the test if anything is started: validation must come first."""

    def popen(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0]!r}")

    monkeypatch.setattr(subprocess, "Popen", popen)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(timeout=0), ValueError, "timeout must be > 0"),
        (dict(timeout=math.inf), ValueError, "timeout must be a finite number"),
        (dict(timeout=math.nan), ValueError, "timeout must be a finite number"),
        (dict(timeout="60"), TypeError, "timeout must be a number"),
        (dict(grace=-1), ValueError, "grace must be >= 0"),
        (dict(grace=math.inf), ValueError, "grace must be a finite number"),
        (dict(nproc_per_node=0), ValueError, "nproc_per_node"),
        (dict(args="--x 1"), TypeError, "args must be a sequence"),
        (dict(module=1), TypeError, "module must be True or False"),
        (dict(env={"A": None}), TypeError, r"env\['A'\] must be"),
        (dict(env={1: "x"}), TypeError, "env keys must be str"),
        (dict(env=["A=1"]), TypeError, "env must be Mapping"),
        (dict(cwd="/no/such/dir"), ValueError, "cwd: no such directory"),
        (dict(cwd=3), TypeError, "cwd must be str or PathLike"),
    ],
)
def test_run_torchrun_validates_everything_before_starting(no_popen, kwargs, error, match):
    kwargs = {"module": True, **kwargs}
    with pytest.raises(error, match=match):
        ddp.run_torchrun("pkg.mod", **kwargs)


def test_run_torchrun_missing_script(no_popen, tmp_path):
    with pytest.raises(ValueError, match="no such script"):
        ddp.run_torchrun(tmp_path / "missing.py")


def test_success_captures_each_rank_and_leaves_no_process(worker):
    """Each rank's output apart; background processes a worker left behind are killed too."""
    script, pid_dir = worker
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        result = ddp.run_torchrun(
            script, ["orphan", pid_dir], nproc_per_node=2, timeout=120, grace=1
        )
        assert result.returncode == 0
        assert result.stdout == {0: "out of rank 0 of 2\n", 1: "out of rank 1 of 2\n"}
        assert result.stderr == {0: "err of rank 0\n", 1: "err of rank 1\n"}
        assert "out of rank" not in result.launcher_output
        assert result.seconds > 0
        assert not any(_alive(p) for p in _worker_pids(pid_dir))
        children = _worker_pids(pid_dir, "child")
        assert len(children) == 4, "the workers did not start their background processes"
        assert _wait_gone(children), f"left running: {[p for p in children if _alive(p)]}"
        assert result.leftover == 4
        assert bystander.poll() is None, "a process the launch did not start was killed"
    finally:
        bystander.kill()
        bystander.wait()


def test_failing_worker_raises_with_traceback_and_exit_code(worker):
    script, pid_dir = worker
    with pytest.raises(ddp.WorkerFailedError, match=r"rank 1 failed \(exit code 3\)") as info:
        ddp.run_torchrun(script, ["raise", pid_dir], nproc_per_node=2, timeout=120)
    err = info.value
    assert (err.rank, err.exitcode) == (1, 3)
    assert err.returncode != 0
    assert "ValueError: planted failure on rank 1" in err.error_text
    assert "ValueError: planted failure on rank 1" in str(err)
    assert err.result.stdout[0] == "out of rank 0 of 2\n"
    assert err.result.leftover == 0
    assert not any(_alive(p) for p in _worker_pids(pid_dir))


def test_timeout_kills_every_process(worker):
    """Workers that ignore SIGTERM must still be gone when the timeout error is raised."""
    script, pid_dir = worker
    start = time.perf_counter()
    with pytest.raises(ddp.LaunchTimeoutError, match="did not finish within") as info:
        ddp.run_torchrun(script, ["hang", pid_dir], nproc_per_node=2, timeout=20, grace=1)
    assert time.perf_counter() - start < 60
    pids = _worker_pids(pid_dir)
    assert len(pids) == 2, "workers did not start before the timeout: raise the timeout"
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)
    assert info.value.timeout == 20
    assert info.value.result.stdout[1] == "out of rank 1 of 2\n"
