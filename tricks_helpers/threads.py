"""Thread knobs: what a new process reads from its environment, what a worker runs with (ch. 10).

``OMP_NUM_THREADS`` is read once, when torch starts; ``torch.set_num_threads`` changes the
running process; the inter-op pool (used by ``torch.jit.fork``, not by eager operators) can be
sized once, before it starts. A notebook can only show the first and the last in *new*
processes: :func:`child_report` starts one with the environment it is given and returns what
torch reports there, and the time of a fixed matrix product.

:func:`set_worker_threads` (a ``worker_init_fn``) and :class:`ThreadsSeen` (a data set whose
items are the thread count of the process that loads them) show what ``DataLoader`` workers
run with: PyTorch sets every worker to one thread, unless a ``worker_init_fn`` undoes it.

Guarantees: nothing here changes the calling process's settings; the child inherits the
caller's environment plus the overrides given, and its errors are raised as ``RuntimeError``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.utils.data import Dataset

from tricks_helpers._checks import check_int, check_type

__all__ = ["child_report", "set_worker_threads", "worker_threads", "ThreadsSeen", "BusyItems"]

_MATMUL_SIZE = 384


def _matmul_seconds(repeats: int) -> float:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(_MATMUL_SIZE, _MATMUL_SIZE, generator=g)
    b = torch.randn(_MATMUL_SIZE, _MATMUL_SIZE, generator=g)
    a @ b  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def child_report(
    env: Mapping[str, str] | None = None,
    *,
    interop: int | None = None,
    repeats: int = 9,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Start a Python process with ``env`` added to this one's environment; report its threads.

    Args:
        env: environment variables to set (or override) in the child, e.g.
            ``{"OMP_NUM_THREADS": "1"}``; a value of ``""`` removes the variable.
        interop: if given, the child calls ``torch.set_num_interop_threads(interop)`` first.
        repeats: timed calls of a fixed 384x384 float32 matrix product (median reported).
        timeout: seconds before the child is stopped.

    Returns:
        ``{"num_threads", "interop_threads", "matmul_seconds"}`` as the child saw them.

    Raises:
        TypeError: on a non-mapping ``env`` or non-string values, or non-integer counts.
        ValueError: on counts below 1.
        RuntimeError: when the child fails.
    """
    env = {} if env is None else check_type("child_report", "env", env, Mapping)
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"child_report: env must map str to str, got {key!r}: {value!r}")
    if interop is not None:
        check_int("child_report", "interop", interop, minimum=1)
    repeats = check_int("child_report", "repeats", repeats, minimum=1)
    child_env = {k: v for k, v in os.environ.items() if env.get(k, None) != ""}
    child_env.update({k: v for k, v in env.items() if v != ""})
    cmd = [sys.executable, "-m", "tricks_helpers.threads", str(repeats)]
    if interop is not None:
        cmd.append(str(interop))
    done = subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise RuntimeError(f"child_report: child failed ({done.returncode}): {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def set_worker_threads(worker_id: int, *, threads: int) -> None:
    """A ``worker_init_fn`` body: give this DataLoader worker ``threads`` intra-op threads."""
    torch.set_num_threads(threads)


def worker_threads(threads: int) -> Callable[[int], None]:
    """A picklable ``worker_init_fn`` that sets each worker to ``threads`` threads.

    Start such workers with ``multiprocessing_context="spawn"``: a worker *forked* from a
    process whose OpenMP pool already ran can hang when it starts a pool of its own (it did in
    this repository's tests with GNU libgomp).

    Raises:
        TypeError: on a non-integer count.
        ValueError: on a count below 1 or above what ``torch.set_num_threads`` takes (2**31 - 1).
    """
    threads = check_int("worker_threads", "threads", threads, minimum=1, maximum=2**31 - 1)
    return functools.partial(set_worker_threads, threads=threads)


class ThreadsSeen(Dataset):
    """A data set of ``length`` items, each the ``torch.get_num_threads()`` of the loading process.

    Raises:
        TypeError, ValueError: on a length that is not an integer >= 1.
    """

    def __init__(self, length: int) -> None:
        self.length = check_int("ThreadsSeen", "length", length, minimum=1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        return torch.get_num_threads()


class BusyItems(Dataset):
    """A data set whose items cost CPU work: ``(features, threads)`` per item.

    Item ``i`` multiplies a ``size x size`` matrix (seeded by ``i``) by itself ``rounds``
    times, as a heavy augmentation would, and returns the mean of its rows (``size`` floats)
    and the ``torch.get_num_threads()`` of the process that made it. The features depend on
    ``i`` only, so loaders that differ in threads give the same batches.

    Raises:
        TypeError, ValueError: on counts that are not integers >= 1.
    """

    def __init__(self, length: int, size: int = 128, rounds: int = 4) -> None:
        self.length = check_int("BusyItems", "length", length, minimum=1)
        self.size = check_int("BusyItems", "size", size, minimum=1)
        self.rounds = check_int("BusyItems", "rounds", rounds, minimum=1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(int(index))
        m = torch.randn(self.size, self.size, generator=g) / self.size**0.5
        x = m
        for _ in range(self.rounds):
            x = torch.tanh(x @ m)
        return x.mean(0), torch.get_num_threads()


def _main(argv: list[str]) -> None:
    repeats = int(argv[0])
    if len(argv) > 1:
        torch.set_num_interop_threads(int(argv[1]))
    report = {
        "num_threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "matmul_seconds": _matmul_seconds(repeats),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    _main(sys.argv[1:])
