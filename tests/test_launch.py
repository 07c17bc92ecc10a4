"""Tests of tricks_helpers.launch: torchrun launches, failures, timeouts, cleanup."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from tricks_helpers import launch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process-tree cleanup is checked through /proc")

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


def _worker_pids(pid_dir: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(pid_dir.glob("pid*"))]


def test_torchrun_command_single_node():
    cmd = launch.torchrun_command("train.py", ["--epochs", 3], nproc_per_node=4, launcher=["torchrun"])
    assert cmd == ["torchrun", "--standalone", "--nproc-per-node", "4", "train.py", "--epochs", "3"]
    cmd = launch.torchrun_command("pkg.mod", module=True, launcher=["torchrun"])
    assert cmd[-2:] == ["-m", "pkg.mod"]
    assert launch.torchrun_command("x.py")[:3] == [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_command_multi_node():
    cmd = launch.torchrun_command("pkg.mod", module=True, nnodes=2, nproc_per_node=8,
                                  rdzv_endpoint="node0:29400", rdzv_id="job7", launcher=["torchrun"])
    assert "--standalone" not in cmd
    assert cmd[1:9] == ["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "node0:29400",
                        "--rdzv-id", "job7"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(target=""), "non-empty"),
    (dict(target="x.py", nproc_per_node=0), "nproc_per_node"),
    (dict(target="x.py", args="--epochs 3"), "sequence of strings"),
    (dict(target="x.py", nnodes=2), "rdzv_endpoint"),
])
def test_torchrun_command_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        launch.torchrun_command(**kwargs)


def test_run_torchrun_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="no such script"):
        launch.run_torchrun(tmp_path / "missing.py")
    with pytest.raises(ValueError, match="timeout"):
        launch.run_torchrun("pkg.mod", module=True, timeout=0)
    with pytest.raises(ValueError, match="grace"):
        launch.run_torchrun("pkg.mod", module=True, grace=-1)


def test_success_captures_each_rank_separately(worker):
    script, pid_dir = worker
    result = launch.run_torchrun(script, ["ok", pid_dir], nproc_per_node=2, timeout=120)
    assert result.returncode == 0
    assert result.stdout == {0: "out of rank 0 of 2\n", 1: "out of rank 1 of 2\n"}
    assert result.stderr == {0: "err of rank 0\n", 1: "err of rank 1\n"}
    assert "out of rank" not in result.launcher_output
    assert result.seconds > 0
    assert not any(_alive(p) for p in _worker_pids(pid_dir))


def test_failing_worker_raises_with_traceback_and_exit_code(worker):
    script, pid_dir = worker
    with pytest.raises(launch.WorkerFailedError, match=r"rank 1 failed \(exit code 3\)") as info:
        launch.run_torchrun(script, ["raise", pid_dir], nproc_per_node=2, timeout=120)
    err = info.value
    assert (err.rank, err.exitcode) == (1, 3)
    assert err.returncode != 0
    assert "ValueError: planted failure on rank 1" in err.error_text
    assert "ValueError: planted failure on rank 1" in str(err)
    assert err.result.stdout[0] == "out of rank 0 of 2\n"
    assert not any(_alive(p) for p in _worker_pids(pid_dir))


def test_timeout_kills_every_process(worker):
    """Workers that ignore SIGTERM must still be gone when the timeout error is raised."""
    script, pid_dir = worker
    start = time.perf_counter()
    with pytest.raises(launch.LaunchTimeoutError, match="did not finish within") as info:
        launch.run_torchrun(script, ["hang", pid_dir], nproc_per_node=2, timeout=20, grace=1)
    assert time.perf_counter() - start < 60
    pids = _worker_pids(pid_dir)
    assert len(pids) == 2, "workers did not start before the timeout: raise the timeout"
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)
    assert info.value.timeout == 20
    assert info.value.result.stdout[1] == "out of rank 1 of 2\n"
