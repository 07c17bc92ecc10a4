"""Tests of tricks_helpers.syncs: host reads counted by a dispatch mode and by the profiler."""

import io

import pytest
import torch

from tricks_helpers import syncs


def test_item_and_control_flow_are_host_reads():
    loss = torch.tensor(1.5)
    assert syncs.host_reads(loss.item) == 1
    assert syncs.host_reads(lambda: bool(loss > 1.0)) == 1
    assert syncs.host_reads(lambda: loss * 2) == 0
    assert syncs.host_reads(loss.cpu) == 0  # a CPU tensor's .cpu() is itself


def test_dispatched_ops_names():
    loss = torch.tensor(1.5)
    ops = syncs.dispatched_ops(lambda: loss > 1.0)
    assert ops == {"aten.gt.Scalar": 1}


def test_printing_is_seen_by_the_profiler_only():
    loss = torch.tensor(1.5)

    def show():
        print(loss, file=io.StringIO())

    assert syncs.host_reads(show) == 0
    assert syncs.profiled_host_reads(show) >= 1
    assert syncs.profiled_host_reads(lambda: loss + 1) == 0


def test_errors():
    with pytest.raises(TypeError, match="fn"):
        syncs.host_reads(3)
    with pytest.raises(TypeError, match="fn"):
        syncs.dispatched_ops(None)
    with pytest.raises(TypeError, match="fn"):
        syncs.profiled_host_reads("x")
