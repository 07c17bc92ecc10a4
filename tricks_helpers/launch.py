"""Run a script under ``torchrun`` from a notebook or a test (introduced in chapter 08).

``torch.multiprocessing.spawn`` pickles the function it starts, and a function defined in a
notebook cell cannot be pickled by the child processes, so the book launches distributed
code the way it runs in production: ``python -m torch.distributed.run`` (``torchrun``) on a
script or a module.

Guarantees of :func:`run_torchrun`:

- the launch is single-node with ``--standalone``: torchrun picks a free port for the
  rendezvous itself, so two launches never collide on a fixed ``MASTER_PORT``;
- each rank's stdout and stderr are captured separately (``--redirects 3`` into a private
  log directory that is removed afterwards), so a rank's output is never interleaved with
  another's; for results, have the script write one file per rank (see
  :mod:`tricks_helpers.ddp_train`);
- a failing worker raises :class:`WorkerFailedError` carrying the failed rank, its exit code
  and the tail of its stderr (the Python traceback);
- on timeout, or on any exception while waiting (e.g. a KeyboardInterrupt), the launcher is
  sent SIGTERM, then after ``grace`` seconds it and every process it started (workers run in
  their own sessions, so each worker's process group) are sent SIGKILL: no process is left
  running when the function returns or raises.

Process-tree cleanup reads ``/proc`` and so is complete on Linux; elsewhere only the
launcher's own process group is signalled.

Beware: torchrun parses the whole command line and accepts abbreviations of its own options,
so a script option that abbreviates one of torchrun's (``--run`` for ``--run-path``) is
rejected by torchrun ("ambiguous option") before the script starts. Name script options so
that they do not.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["LaunchError", "WorkerFailedError", "LaunchTimeoutError", "LaunchResult",
           "torchrun_command", "run_torchrun"]

_TAIL_LINES = 25


class LaunchError(RuntimeError):
    """Base class of the errors raised by :func:`run_torchrun`."""


class WorkerFailedError(LaunchError):
    """A worker exited with a non-zero code.

    Attributes:
        rank: the rank torchrun reports as the first failure (``None`` if not reported).
        exitcode: that worker's exit code (negative: killed by that signal; ``None`` if not
            reported).
        returncode: the exit code of the torchrun launcher itself.
        error_text: the tail of the failed rank's stderr (usually its traceback).
        result: the :class:`LaunchResult` with every rank's captured output.
    """

    def __init__(self, message: str, *, rank: int | None, exitcode: int | None,
                 returncode: int, error_text: str, result: "LaunchResult") -> None:
        super().__init__(message)
        self.rank = rank
        self.exitcode = exitcode
        self.returncode = returncode
        self.error_text = error_text
        self.result = result


class LaunchTimeoutError(LaunchError, TimeoutError):
    """The launch ran past its timeout; every process it started has been killed.

    Attributes:
        timeout: the limit in seconds.
        result: a :class:`LaunchResult` with the output captured until the kill.
    """

    def __init__(self, message: str, *, timeout: float, result: "LaunchResult") -> None:
        super().__init__(message)
        self.timeout = timeout
        self.result = result


@dataclass(frozen=True)
class LaunchResult:
    """What one torchrun launch printed, per rank, and how long it took.

    Attributes:
        command: the command line that was run.
        returncode: torchrun's exit code (0 on success).
        stdout: rank -> everything that rank wrote to stdout.
        stderr: rank -> everything that rank wrote to stderr.
        launcher_output: torchrun's own stdout and stderr (not the workers').
        seconds: wall time of the whole launch, process start-up included.
    """

    command: tuple[str, ...]
    returncode: int
    stdout: dict[int, str] = field(default_factory=dict)
    stderr: dict[int, str] = field(default_factory=dict)
    launcher_output: str = ""
    seconds: float = 0.0


def _check_positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def torchrun_command(target: str | os.PathLike, args: Sequence[str] = (), *,
                     nproc_per_node: int = 2, module: bool = False, nnodes: int | str | None = None,
                     rdzv_endpoint: str | None = None, rdzv_id: str | None = None,
                     rdzv_backend: str = "c10d",
                     launcher: Sequence[str] | None = None) -> list[str]:
    """Build a torchrun command line.

    Single node (``nnodes`` is ``None``): ``--standalone``, which starts a local rendezvous
    on a free port. Several nodes: ``--nnodes``, ``--rdzv-backend``, ``--rdzv-endpoint``
    and ``--rdzv-id``; the same command is run on every node.

    Args:
        target: a script path, or a module name when ``module`` is true.
        args: arguments passed to the script.
        nproc_per_node: worker processes per node (one per GPU on GPU machines).
        module: run ``target`` as ``python -m target``.
        nnodes: number of nodes, e.g. ``2`` or an elastic range ``"1:4"`` given as str.
        rdzv_endpoint: ``host:port`` of the rendezvous (required with ``nnodes``).
        rdzv_id: a job id shared by all nodes of one job (required with ``nnodes``).
        rdzv_backend: rendezvous backend (``c10d`` needs no extra service).
        launcher: the launcher's argv prefix; default
            ``[sys.executable, "-m", "torch.distributed.run"]`` (``["torchrun"]`` to print).

    Returns:
        The command as a list of strings.

    Raises:
        ValueError: on an empty target, a bad process count, or a multi-node launch without
            endpoint or id.
    """
    target = os.fspath(target)
    if not target.strip():
        raise ValueError("torchrun_command: target must be a non-empty script path or module")
    _check_positive_int("nproc_per_node", nproc_per_node)
    if isinstance(args, str):
        raise ValueError("torchrun_command: args must be a sequence of strings, not one string")
    cmd = list(launcher) if launcher is not None else [sys.executable, "-m", "torch.distributed.run"]
    if nnodes is None:
        cmd += ["--standalone"]
    else:
        if not rdzv_endpoint or not rdzv_id:
            raise ValueError("torchrun_command: a multi-node launch (nnodes) needs rdzv_endpoint "
                             "('host:port') and rdzv_id (a job id shared by all nodes)")
        cmd += ["--nnodes", str(nnodes), "--rdzv-backend", rdzv_backend,
                "--rdzv-endpoint", rdzv_endpoint, "--rdzv-id", rdzv_id]
    cmd += ["--nproc-per-node", str(nproc_per_node)]
    cmd += ["-m", target] if module else [target]
    cmd += [str(a) for a in args]
    return cmd


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids, read from /proc (empty where /proc is absent)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may contain spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) >= 2:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _descendants(pid: int) -> list[int]:
    children = _children_map()
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate_tree(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the launcher, wait ``grace`` s, then SIGKILL it and everything it started."""
    known = set(_descendants(proc.pid))
    if proc.poll() is None:
        _kill(proc.pid, signal.SIGTERM, group=True)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        known |= set(_descendants(proc.pid))
    known |= set(_descendants(proc.pid))
    _kill(proc.pid, signal.SIGKILL, group=True)
    for pid in sorted(known):
        # workers are session leaders (torchrun starts them with start_new_session=True):
        # their process group holds their own children (e.g. DataLoader workers)
        _kill(pid, signal.SIGKILL, group=True)
        _kill(pid, signal.SIGKILL, group=False)
    proc.wait()


def _read_rank_logs(log_dir: Path, nproc: int) -> tuple[dict[int, str], dict[int, str]]:
    out: dict[int, str] = {}
    err: dict[int, str] = {}
    attempts = sorted(log_dir.glob("*/attempt_*"), key=lambda p: (p.stat().st_mtime, p.name))
    for rank in range(nproc):
        for name, target in (("stdout.log", out), ("stderr.log", err)):
            text = ""
            for attempt in attempts:  # the last attempt wins
                f = attempt / str(rank) / name
                if f.is_file():
                    text = f.read_text(encoding="utf-8", errors="replace")
            target[rank] = text
    return out, err


_ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)


def _tail(text: str, lines: int = _TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_torchrun(target: str | os.PathLike, args: Sequence[str] = (), *, nproc_per_node: int = 2,
                 module: bool = False, timeout: float = 120.0, grace: float = 5.0,
                 env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike | None = None) -> LaunchResult:
    """Launch ``target`` on ``nproc_per_node`` local workers with torchrun and wait for it.

    Args:
        target: a script path, or a module name when ``module`` is true.
        args: arguments for the script (strings; other values are converted with ``str``).
        nproc_per_node: number of worker processes (ranks).
        module: run ``python -m target`` in each worker.
        timeout: seconds before everything is killed and :class:`LaunchTimeoutError` raised.
        grace: seconds between SIGTERM and SIGKILL when killing.
        env: variables added to (or overriding) this process's environment for the launch.
        cwd: working directory of the launch (default: the current one).

    Returns:
        A :class:`LaunchResult` with each rank's stdout/stderr.

    Raises:
        ValueError: on bad arguments (see :func:`torchrun_command`), a non-positive timeout,
            or a script path that does not exist.
        WorkerFailedError: a worker exited with a non-zero code.
        LaunchTimeoutError: the launch did not finish within ``timeout`` seconds.
    """
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"run_torchrun: timeout must be a positive number of seconds, got {timeout!r}")
    if not (isinstance(grace, (int, float)) and grace >= 0):
        raise ValueError(f"run_torchrun: grace must be >= 0 seconds, got {grace!r}")
    if not module:
        script = Path(cwd or ".", target)
        if not script.is_file():
            raise ValueError(f"run_torchrun: no such script: {os.fspath(target)!r}")
    base = torchrun_command(target, args, nproc_per_node=nproc_per_node, module=module)
    log_dir = Path(tempfile.mkdtemp(prefix="torchrun_logs_"))
    # options go before the script: insert after "--standalone"
    i = base.index("--standalone") + 1
    cmd = base[:i] + ["--log-dir", str(log_dir), "--redirects", "3"] + base[i:]
    full_env = dict(os.environ)
    full_env.update({str(k): str(v) for k, v in (env or {}).items()})
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=full_env, cwd=cwd, start_new_session=True)
        try:
            launcher_output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _terminate_tree(proc, grace)
            launcher_output = proc.stdout.read() if proc.stdout else ""
            out, err = _read_rank_logs(log_dir, nproc_per_node)
            result = LaunchResult(tuple(cmd), proc.returncode, out, err, launcher_output,
                                  time.perf_counter() - start)
            raise LaunchTimeoutError(
                f"torchrun did not finish within {timeout:g} s; all its processes were killed",
                timeout=float(timeout), result=result) from None
        except BaseException:
            _terminate_tree(proc, grace)
            raise
        out, err = _read_rank_logs(log_dir, nproc_per_node)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    result = LaunchResult(tuple(cmd), proc.returncode, out, err, launcher_output or "",
                          time.perf_counter() - start)
    if proc.returncode != 0:
        m = _ROOT_CAUSE.search(result.launcher_output)
        rank = int(m.group(1)) if m else None
        exitcode = int(m.group(2)) if m else None
        if rank is not None and result.stderr.get(rank, "").strip():
            error_text = _tail(result.stderr[rank])
        else:
            error_text = _tail(result.launcher_output)
        where = f"rank {rank}" if rank is not None else "a worker"
        code = f"exit code {exitcode}" if exitcode is not None else f"launcher exit code {proc.returncode}"
        raise WorkerFailedError(f"{where} failed ({code}); its stderr ends with:\n{error_text}",
                                rank=rank, exitcode=exitcode, returncode=proc.returncode,
                                error_text=error_text, result=result)
    return result
