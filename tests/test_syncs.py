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


_X = torch.tensor([0.5, -1.0, 2.0, -3.0, 0.5])
_MASK = _X > 0


@pytest.mark.parametrize(
    ("name", "fn", "op"),
    [
        ("x[mask]", lambda: _X[_MASK], "aten.index.Tensor"),
        ("x[mask] = 0", lambda: _X.clone().__setitem__(_MASK, 0.0), "aten.index_put_.default"),
        ("nonzero", lambda: _X.nonzero(), "aten.nonzero.default"),
        ("torch.where(mask)", lambda: torch.where(_MASK), "aten.nonzero.default"),
        ("unique", lambda: _X.unique(), "aten._unique2.default"),
        ("unique(dim=0)", lambda: torch.unique(_X.view(5, 1), dim=0), "aten.unique_dim.default"),
        ("unique_consecutive", lambda: _X.unique_consecutive(), "aten.unique_consecutive.default"),
        ("masked_select", lambda: _X.masked_select(_MASK), "aten.masked_select.default"),
        ("bincount", lambda: _MASK.long().bincount(), "aten.bincount.default"),
        (
            "repeat_interleave",
            lambda: _X.repeat_interleave(_MASK.long()),
            "aten.repeat_interleave.Tensor",  # self_Tensor decomposes into it
        ),
    ],
)
def test_data_dependent_shapes_are_host_reads(name, fn, op):
    assert syncs.host_reads(fn) == 1, name
    with syncs.HostReadCounter() as seen:
        fn()
    assert dict(seen.reads) == {f"{op} (data-dependent shape)": 1}, name


def test_shapes_known_in_advance_are_not_host_reads():
    index = torch.tensor([0, 2])
    assert syncs.host_reads(lambda: _X[index]) == 0  # an integer index: its size is known
    assert syncs.host_reads(lambda: _X.masked_fill(_MASK, 0.0)) == 0
    assert syncs.host_reads(lambda: torch.where(_MASK, _X, 0.0)) == 0
    assert (
        syncs.host_reads(
            lambda: _X.repeat_interleave(torch.ones(5, dtype=torch.long), output_size=5)
        )
        == 0
    )


def test_profiled_host_reads_refuses_to_run_inside_a_running_profiler():
    from torch.profiler import ProfilerActivity, profile

    loss = torch.tensor(1.5)
    with profile(activities=[ProfilerActivity.CPU]) as outer:
        loss.item()
        with pytest.raises(
            RuntimeError, match="profiled_host_reads: a profiler is already running"
        ):
            syncs.profiled_host_reads(loss.item)
        loss.item()
    # the outer profile keeps its own events (a nested profiler would have ended its session)
    assert sum(e.name == "aten::_local_scalar_dense" for e in outer.events()) == 2


def test_profiled_host_reads_warns_nothing():
    """torch 2.10 warns at a process's first profiler that a cycle's events are cleared; the
    helper's single cycle loses nothing, so the warning must not reach a notebook's stderr."""
    import warnings

    from torch.profiler import profiler as torch_profiler

    shown = getattr(torch_profiler, "_WARNINGS_SHOWN", set())
    saved = set(shown)
    shown.clear()  # as in a fresh process: the warning not yet shown
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert syncs.profiled_host_reads(lambda: torch.ones(()).item()) == 1
    finally:
        shown |= saved
