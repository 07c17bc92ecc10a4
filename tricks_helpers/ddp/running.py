"""``run_torchrun``: a script under torchrun, its ranks' output, its failures (chapter 08).

The command line is :func:`tricks_helpers.ddp.cli.torchrun_command`'s; the face
:mod:`tricks_helpers.ddp` hands these names on.

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
  :func:`tricks_helpers.ddp.common.write_result`);
- a failing worker raises :class:`WorkerFailedError` carrying the failed rank, its exit code
  and the tail of its stderr (the Python traceback);
- every argument is checked before anything starts (wrong type: :class:`TypeError`, wrong
  value: :class:`ValueError`, the package's policy);
- on timeout, or on any exception while waiting (e.g. a KeyboardInterrupt), the launcher is
  sent SIGTERM, then after ``grace`` seconds it and every process it started (workers run in
  their own sessions, so each worker's process group) are sent SIGKILL;
- on success too, processes the launch started and left running (e.g. a background process a
  worker started and never waited for, even in a session of its own) are sent SIGTERM, then
  SIGKILL after ``grace`` seconds, and counted in :attr:`LaunchResult.leftover`: no process of
  the launch is left running when the function returns or raises.

How the launch's processes are found: every process started by the launch inherits an
environment variable with a marker unique to the launch (``TRICKS_HELPERS_LAUNCH_ID``), and
``/proc/<pid>/environ`` is searched for it; the launcher's process tree is walked as well. A
process that replaces its environment before starting a child, and then leaves the tree (a
double fork), escapes both. This cleanup reads ``/proc`` and so is complete on Linux; elsewhere
only the launcher's own process group is signalled.

Beware: torchrun parses the whole command line and accepts abbreviations of its own options,
so a script option that abbreviates one of torchrun's (``--run`` for ``--run-path``) is
rejected by torchrun ("ambiguous option") before the script starts. Name script options so
that they do not.
"""

from __future__ import annotations

import numbers
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tricks_helpers._checks import check_number, check_type
from tricks_helpers.ddp._processes import MARKER_VARIABLE, kill_marked, terminate_tree
from tricks_helpers.ddp.cli import build_command

__all__ = [
    "LaunchError",
    "WorkerFailedError",
    "LaunchTimeoutError",
    "LaunchResult",
    "run_torchrun",
]

_TAIL_LINES = 25  # lines of a failed rank's stderr kept in the error


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

    def __init__(
        self,
        message: str,
        *,
        rank: int | None,
        exitcode: int | None,
        returncode: int,
        error_text: str,
        result: LaunchResult,
    ) -> None:
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

    def __init__(self, message: str, *, timeout: float, result: LaunchResult) -> None:
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
        leftover: processes of the launch still running after torchrun exited (e.g. a
            worker's background child), which were then killed; 0 for a tidy script.
    """

    command: tuple[str, ...]
    returncode: int
    stdout: dict[int, str] = field(default_factory=dict)
    stderr: dict[int, str] = field(default_factory=dict)
    launcher_output: str = ""
    seconds: float = 0.0
    leftover: int = 0


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


def run_torchrun(
    target: str | os.PathLike,
    args: Sequence[str] = (),
    *,
    nproc_per_node: int = 2,
    module: bool = False,
    timeout: float = 120.0,
    grace: float = 5.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
) -> LaunchResult:
    """Launch ``target`` on ``nproc_per_node`` local workers with torchrun and wait for it.

    Args:
        target: a script path, or a module name when ``module`` is true.
        args: arguments for the script (strings, paths or numbers; converted to strings).
        nproc_per_node: number of worker processes (ranks).
        module: run ``python -m target`` in each worker.
        timeout: seconds (finite, > 0) before everything is killed and
            :class:`LaunchTimeoutError` raised.
        grace: seconds (finite, >= 0) between SIGTERM and SIGKILL when killing.
        env: variables added to (or overriding) this process's environment for the launch
            (string keys; string or number values).
        cwd: working directory of the launch (default: the current one); must exist.

    Returns:
        A :class:`LaunchResult` with each rank's stdout/stderr.

    Raises:
        TypeError: on an argument of the wrong type (see :func:`torchrun_command`).
        ValueError: on a bad value (see :func:`torchrun_command`), a timeout that is not a
            finite positive number, a negative or infinite grace, a missing ``cwd`` or a
            script path that does not exist. All of these are raised before anything starts.
        WorkerFailedError: a worker exited with a non-zero code.
        LaunchTimeoutError: the launch did not finish within ``timeout`` seconds.
    """
    where = "run_torchrun"
    base = build_command(
        where,
        target,
        args,
        nproc_per_node=nproc_per_node,
        module=module,
        nnodes=None,
        rdzv_endpoint=None,
        rdzv_id=None,
        rdzv_backend="c10d",
        launcher=None,
    )
    timeout = check_number(where, "timeout", timeout, minimum=0.0, strict_minimum=True)
    grace = check_number(where, "grace", grace, minimum=0.0)
    extra_env = {}
    if env is not None:
        check_type(where, "env", env, Mapping)
        for key, value in env.items():
            check_type(where, "env keys", key, str)
            if isinstance(value, str):
                extra_env[key] = value
            elif isinstance(value, numbers.Real) and not isinstance(value, bool):
                extra_env[key] = str(value)
            else:
                raise TypeError(
                    f"{where}: env[{key!r}] must be a string or a number, got "
                    f"{type(value).__name__} {value!r}"
                )
    if cwd is not None:
        check_type(where, "cwd", cwd, (str, os.PathLike))
        if not Path(cwd).is_dir():
            raise ValueError(f"{where}: cwd: no such directory: {os.fspath(cwd)!r}")
    if not module:
        script = Path(cwd or ".", target)
        if not script.is_file():
            raise ValueError(f"{where}: no such script: {os.fspath(target)!r}")
    marker = uuid.uuid4().hex
    full_env = dict(os.environ)
    full_env.update(extra_env)
    full_env[MARKER_VARIABLE] = marker
    log_dir = Path(tempfile.mkdtemp(prefix="torchrun_logs_"))
    # options go before the script: insert after "--standalone"
    i = base.index("--standalone") + 1
    cmd = base[:i] + ["--log-dir", str(log_dir), "--redirects", "3"] + base[i:]
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            launcher_output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            terminate_tree(proc, grace, marker)
            launcher_output = proc.stdout.read() if proc.stdout else ""
            out, err = _read_rank_logs(log_dir, nproc_per_node)
            result = LaunchResult(
                tuple(cmd), proc.returncode, out, err, launcher_output, time.perf_counter() - start
            )
            raise LaunchTimeoutError(
                f"torchrun did not finish within {timeout:g} s; all its processes were killed",
                timeout=float(timeout),
                result=result,
            ) from None
        except BaseException:
            terminate_tree(proc, grace, marker)
            raise
        leftover = kill_marked(marker, grace)
        out, err = _read_rank_logs(log_dir, nproc_per_node)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    result = LaunchResult(
        tuple(cmd),
        proc.returncode,
        out,
        err,
        launcher_output or "",
        time.perf_counter() - start,
        leftover,
    )
    if proc.returncode != 0:
        m = _ROOT_CAUSE.search(result.launcher_output)
        rank = int(m.group(1)) if m else None
        exitcode = int(m.group(2)) if m else None
        if rank is not None and result.stderr.get(rank, "").strip():
            error_text = _tail(result.stderr[rank])
        else:
            error_text = _tail(result.launcher_output)
        where = f"rank {rank}" if rank is not None else "a worker"
        code = (
            f"exit code {exitcode}"
            if exitcode is not None
            else f"launcher exit code {proc.returncode}"
        )
        raise WorkerFailedError(
            f"{where} failed ({code}); its stderr ends with:\n{error_text}",
            rank=rank,
            exitcode=exitcode,
            returncode=proc.returncode,
            error_text=error_text,
            result=result,
        )
    return result
