"""Finding and stopping every process a launch started (private; chapter 08).

Used by :mod:`~tricks_helpers.ddp.running`.

Every process started by a launch inherits the environment variable :data:`MARKER_VARIABLE`
with a value unique to the launch; :func:`kill_marked` finds them through
``/proc/<pid>/environ``, :func:`terminate_tree` through the launcher's process tree
(``/proc/<pid>/stat``). Both are complete on Linux only; elsewhere only the launcher's own
process group is signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["MARKER_VARIABLE", "kill_marked", "terminate_tree"]

#: The environment variable carrying a launch's unique marker.
MARKER_VARIABLE = "TRICKS_HELPERS_LAUNCH_ID"


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
        fields = stat[stat.rfind(")") + 2 :].split()
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


def _marked_pids(marker: str) -> list[int]:
    """Processes whose environment holds this launch's marker (empty where /proc is absent)."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path("/proc", entry, "environ").read_bytes()
        except OSError:  # gone, or another user's process
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path("/proc", str(pid), "stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] not in ("Z", "X")


def kill_marked(marker: str, grace: float) -> int:
    """SIGTERM the processes carrying ``marker``, SIGKILL what remains after ``grace`` s.

    Returns:
        How many marked processes were running when called.
    """
    first = _marked_pids(marker)
    for pid in first:
        _kill(pid, signal.SIGTERM, group=False)
    deadline = time.monotonic() + grace
    while any(_running(p) for p in first) and time.monotonic() < deadline:
        time.sleep(0.05)
    for _ in range(100):  # re-scan: a process may have started a child meanwhile
        left = [p for p in _marked_pids(marker) if _running(p)]
        if not left:
            break
        for pid in left:
            _kill(pid, signal.SIGKILL, group=False)
        time.sleep(0.01)
    return len(first)


def _kill(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def terminate_tree(proc: subprocess.Popen, grace: float, marker: str) -> None:
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
    kill_marked(marker, 0.0)  # what left the tree: background children of the workers
