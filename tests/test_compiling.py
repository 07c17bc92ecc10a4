"""Tests of tricks_helpers.compiling (cold start, graph counts, graph breaks, parameter diff)."""

import itertools
import math

import pytest
import torch
import torch._dynamo
from torch import nn

from tricks_helpers import compiling


def _loss(model, X):
    return model(X).sum()


def _loss_with_item(model, X, seen):
    h = model(X)
    seen.append(h.mean().item())
    return (h * 2).sum()


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_time_cold_start_separates_first_call(monkeypatch):
    ticks = itertools.count()
    times = iter([0.0, 5.0, 5.0, 5.5, 5.5, 6.5, 6.5, 7.0])  # durations 5, 0.5, 1, 0.5
    monkeypatch.setattr(compiling.time, "perf_counter", lambda: next(times))
    calls = []
    cold = compiling.time_cold_start(lambda: calls.append(next(ticks)), calls=4)
    assert calls == [0, 1, 2, 3]
    assert cold.first == 5.0 and cold.later == (0.5, 1.0, 0.5)
    assert cold.steady == 0.5 and cold.ratio == 10.0


def test_time_cold_start_first_replaces_the_first_call():
    seen = []
    compiling.time_cold_start(lambda: seen.append("fn"), calls=3, first=lambda: seen.append("1"))
    assert seen == ["1", "fn", "fn"]


def test_time_cold_start_frozen_clock_raises(monkeypatch):
    monkeypatch.setattr(compiling.time, "perf_counter", lambda: 1.0)
    with pytest.raises(RuntimeError, match="clock did not advance"):
        compiling.time_cold_start(lambda: None, calls=3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"fn": 3}, TypeError, "fn must be callable"),
        ({"fn": lambda: None, "calls": 2}, ValueError, "calls"),
        ({"fn": lambda: None, "calls": 3.0}, TypeError, "calls"),
        ({"fn": lambda: None, "first": "x"}, TypeError, "first must be callable"),
    ],
)
def test_time_cold_start_rejects_bad_arguments(kwargs, error, match):
    fn = kwargs.pop("fn")
    with pytest.raises(error, match=match):
        compiling.time_cold_start(fn, **kwargs)


def _graphs_for(dynamic, mark=False):
    torch._dynamo.reset()
    model = nn.Linear(4, 3)
    counter = compiling.GraphCounter()
    fn = torch.compile(_loss, backend=counter, dynamic=dynamic)
    for batch in (8, 4, 2):
        X = torch.randn(batch, 4)
        if mark:
            torch._dynamo.mark_dynamic(X, 0)
        fn(model, X).backward()
    return counter


def test_graph_counter_counts_recompilations_per_dynamic_setting():
    static, default, dynamic, marked = (
        _graphs_for(False),
        _graphs_for(None),
        _graphs_for(True),
        _graphs_for(None, mark=True),
    )
    assert (static.graphs, default.graphs, dynamic.graphs, marked.graphs) == (3, 2, 1, 1)
    assert static.symbolic == [0, 0, 0]
    assert default.symbolic[0] == 0 and default.symbolic[1] > 0
    assert dynamic.symbolic[0] > 0 and marked.symbolic[0] > 0


def test_graph_counter_runs_the_graph_eagerly():
    counter = compiling.GraphCounter()
    model = nn.Linear(4, 3)
    X = torch.randn(5, 4)
    out = torch.compile(_loss, backend=counter)(model, X)
    assert torch.equal(out, _loss(model, X)) and counter.graphs == 1


def test_graph_breaks_counts_an_item_call():
    model = nn.Linear(4, 3)
    X = torch.randn(5, 4)
    clean = compiling.graph_breaks(_loss, model, X)
    seen = []
    broken = compiling.graph_breaks(_loss_with_item, model, X, seen)
    assert (clean.graphs, clean.breaks, clean.reasons) == (1, 0, ())
    assert (broken.graphs, broken.breaks) == (2, 1)
    assert "item()" in broken.reasons[0] and "\n" not in broken.reasons[0]
    assert len(seen) == 1  # the function ran once


def test_graph_breaks_rejects_non_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        compiling.graph_breaks("loss")


def test_params_max_diff_measures_the_largest_difference():
    a = nn.Linear(3, 2)
    b = nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    assert compiling.params_max_diff(a, b) == 0.0
    with torch.no_grad():
        b.bias[1] += 0.25
        b.weight[0, 0] -= 0.125
    assert compiling.params_max_diff(a, b) == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("a", "b", "error", "match"),
    [
        ("x", nn.Linear(2, 2), TypeError, "a must be"),
        (nn.Linear(2, 2), None, TypeError, "b must be"),
        (nn.ReLU(), nn.ReLU(), ValueError, "no parameters"),
        (nn.Linear(2, 2), nn.Linear(2, 2, bias=False), ValueError, "names differ"),
        (nn.Linear(2, 2), nn.Linear(2, 3), ValueError, "'weight' has shape"),
    ],
)
def test_params_max_diff_rejects_mismatched_models(a, b, error, match):
    with pytest.raises(error, match=match):
        compiling.params_max_diff(a, b)


def test_params_max_diff_reports_nan_as_the_largest_difference():
    a = nn.Linear(3, 2)
    b = nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        b.weight[0, 0] = float("nan")  # a diverged run never "equals" eager
    assert math.isnan(compiling.params_max_diff(a, b))
    assert math.isnan(compiling.params_max_diff(b, a))
    with torch.no_grad():
        b.bias[1] += 0.5  # a NaN beside a 0.5 difference: still NaN
    assert math.isnan(compiling.params_max_diff(a, b))
    c = nn.Linear(3, 2)
    c.load_state_dict(b.state_dict())
    assert math.isnan(compiling.params_max_diff(b, c))  # NaN at the same place in both
    with torch.no_grad():
        c.weight.fill_(1.0)
        d = nn.Linear(3, 2)
        d.load_state_dict(c.state_dict())
        d.weight[1, 1] = float("inf")
    assert compiling.params_max_diff(c, d) == math.inf
