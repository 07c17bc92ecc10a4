"""Tests of tricks_helpers.threads: child processes, worker threads, error paths."""

import pytest
import torch
from torch.utils.data import DataLoader

from tricks_helpers import threads


def test_child_reads_omp_num_threads_at_start():
    report = threads.child_report({"OMP_NUM_THREADS": "1"}, repeats=1)
    assert report["num_threads"] == 1
    assert report["matmul_seconds"] > 0


def test_child_interop_threads():
    report = threads.child_report({"OMP_NUM_THREADS": "1"}, interop=3, repeats=1)
    assert report["interop_threads"] == 3


def test_child_report_errors(monkeypatch):
    with pytest.raises(TypeError, match="env must map str to str"):
        threads.child_report({"OMP_NUM_THREADS": 1})
    with pytest.raises(ValueError, match="interop"):
        threads.child_report(interop=0)
    monkeypatch.setattr(threads.sys, "executable", "/bin/false")
    with pytest.raises(RuntimeError, match="child failed"):
        threads.child_report(repeats=1)


def test_workers_run_one_thread_unless_told():
    seen = list(DataLoader(threads.ThreadsSeen(4), batch_size=2, num_workers=2))
    assert torch.cat(seen).tolist() == [1, 1, 1, 1]
    told = DataLoader(
        threads.ThreadsSeen(4),
        batch_size=2,
        num_workers=2,
        worker_init_fn=threads.worker_threads(2),
        # a forked worker running an OpenMP pool of 2 can hang (libgomp after fork): spawn it
        multiprocessing_context="spawn",
    )
    assert torch.cat(list(told)).tolist() == [2, 2, 2, 2]


def test_worker_threads_errors():
    with pytest.raises(ValueError, match="threads"):
        threads.worker_threads(0)
    with pytest.raises(ValueError, match="worker_threads: threads"):
        threads.worker_threads(2**31)
    with pytest.raises(TypeError, match="length"):
        threads.ThreadsSeen(2.0)


def test_busy_items_are_the_same_whatever_the_threads():
    plain = DataLoader(threads.BusyItems(4, size=16, rounds=2), batch_size=4, num_workers=0)
    (x0, t0) = next(iter(plain))
    told = DataLoader(
        threads.BusyItems(4, size=16, rounds=2),
        batch_size=4,
        num_workers=1,
        worker_init_fn=threads.worker_threads(2),
        # a forked worker running an OpenMP pool of 2 can hang (libgomp after fork): spawn it
        multiprocessing_context="spawn",
    )
    (x1, t1) = next(iter(told))
    assert torch.equal(x0, x1) and x0.shape == (4, 16)
    assert t1.tolist() == [2, 2, 2, 2]
    with pytest.raises(ValueError, match="rounds"):
        threads.BusyItems(4, rounds=0)
