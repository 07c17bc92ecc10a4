"""Use n CPU cores: pin the process to them and set torch's thread count to match (ch. 03, 09).

Pinning cores and setting the intra-op thread count are one decision: pinned to 2 cores with
16 threads, every parallel operator waits at a barrier for threads that share a core; with 2
threads on 16 free cores, a timing means something else than on the 2-core machine the stored
outputs come from. :func:`use_cores` does both and prints one ``[hardware] `` line saying what it
set (masked by the sanitize file: shown on the page, not compared).

It restores nothing by itself: the setting lasts until :meth:`CoreUse.restore` is called (a
chapter calls it in its last cell, visibly). Processes started afterwards (DataLoader workers)
inherit the pinning, not the thread count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from tricks_helpers._checks import check_bool, check_int

__all__ = ["CoreUse", "use_cores"]


def _affinity() -> tuple[int, ...] | None:
    """The CPUs this process may run on, or None where the OS cannot say (macOS, Windows)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return tuple(sorted(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class CoreUse:
    """What :func:`use_cores` set, and what was set before (for :meth:`restore`).

    Attributes:
        asked: the core count asked for.
        cores: the CPUs the process is pinned to now (empty where the OS cannot pin).
        threads: torch's intra-op thread count now.
        before_cores: the CPUs allowed before (empty where the OS cannot pin).
        before_threads: the intra-op thread count before.
    """

    asked: int
    cores: tuple[int, ...]
    threads: int
    before_cores: tuple[int, ...]
    before_threads: int

    def line(self) -> str:
        """The ``[hardware] `` line :func:`use_cores` prints."""
        if not self.cores:
            where = "this OS cannot pin a process to cores"
        elif len(self.cores) < self.asked:
            where = f"asked for {self.asked} cores, this machine gives {len(self.cores)}"
        else:
            where = f"of {len(self.before_cores)} available"
        pinned = f"{len(self.cores)} CPU cores" if self.cores else "cores not pinned"
        return f"[hardware] {pinned} and {self.threads} torch threads ({where})"

    def restore(self, *, show: bool = True) -> None:
        """Give back the cores and thread count that were set before :func:`use_cores`.

        Args:
            show: print one line saying what was restored.
        """
        check_bool("CoreUse.restore", "show", show)
        if self.before_cores:
            os.sched_setaffinity(0, self.before_cores)
        torch.set_num_threads(self.before_threads)
        if show:
            print(f"cores and threads restored: {torch.get_num_threads() == self.before_threads}")


def use_cores(n: int, *, show: bool = True) -> CoreUse:
    """Pin this process to ``n`` of its CPU cores and set ``torch.set_num_threads`` to match.

    The first ``n`` cores of the current affinity are kept. On a machine (or a container) that
    gives fewer than ``n``, all of them are used and the printed line says so; where the OS
    cannot pin (no ``os.sched_setaffinity``), only the thread count is set (to ``n``, or the
    machine's core count if smaller). Nothing is restored silently: call
    :meth:`CoreUse.restore`.

    Args:
        n: how many cores (and intra-op threads) to use, at least 1.
        show: print the ``[hardware] `` line (see :meth:`CoreUse.line`).

    Returns:
        What was set and what was set before.

    Raises:
        TypeError: if ``n`` is not an int or ``show`` not a bool.
        ValueError: if ``n`` < 1.
    """
    n = check_int("use_cores", "n", n, minimum=1)
    check_bool("use_cores", "show", show)
    before = _affinity()
    before_threads = torch.get_num_threads()
    if before:
        cores = before[:n]
        os.sched_setaffinity(0, cores)
        threads = len(cores)
    else:
        cores = ()
        threads = min(n, os.cpu_count() or n)
    torch.set_num_threads(threads)
    used = CoreUse(n, cores, torch.get_num_threads(), before or (), before_threads)
    if show:
        print(used.line())
    return used
