"""Tests of tricks_helpers.profiling: profiler tables and cProfile runs as plain data."""

from __future__ import annotations

import cProfile
import json
import os
import pstats

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from tricks_helpers import profiling


ROWS = 256


def _many_small(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([r.std() for r in x])


@pytest.fixture(scope="module")
def prof():
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")   # no start/stop lines on stderr
    x = torch.randn(ROWS, 8)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        for _ in range(3):
            with record_function("slow"):
                _many_small(x)
            with record_function("fast"):   # one tiny op vs ROWS of them: robust under load
                x.neg()
    return p


def test_op_stats_counts_are_facts(prof):
    rows = {r.name: r for r in profiling.op_stats(prof)}
    assert rows["slow"].calls == 3 and rows["slow"].is_range
    assert rows["aten::std"].calls == 3 * ROWS and not rows["aten::std"].is_range
    assert rows["aten::neg"].calls == 3
    assert rows["slow"].cpu_total_us >= rows["slow"].self_cpu_us >= 0
    assert profiling.op_stats(prof.key_averages()) == profiling.op_stats(prof)


def test_top_ops_sorting_and_ranges(prof):
    by_calls = profiling.top_ops(prof, n=1, by="calls")
    assert by_calls[0].calls >= 3 * ROWS
    assert all(not r.is_range for r in profiling.top_ops(prof, n=50))
    with_ranges = profiling.top_ops(prof, n=50, by="cpu_total_us", include_ranges=True)
    assert {"slow", "fast"} <= {r.name for r in with_ranges}
    totals = [r.cpu_total_us for r in with_ranges]
    assert totals == sorted(totals, reverse=True)


def test_range_stats_and_largest_range(prof):
    stats = profiling.range_stats(prof, ["fast", "slow"])
    assert list(stats) == ["fast", "slow"]
    assert stats["slow"].cpu_total_us > stats["fast"].cpu_total_us
    assert profiling.largest_range(prof, ["fast", "slow"]) == "slow"
    assert profiling.largest_range(prof, ["fast", "slow"], by="calls") in ("fast", "slow")


@pytest.mark.parametrize("call, match", [
    (lambda p: profiling.top_ops(p, by="wall"), "by must be one of"),
    (lambda p: profiling.top_ops(p, n=0), "n must be"),
    (lambda p: profiling.range_stats(p, []), "non-empty"),
    (lambda p: profiling.range_stats(p, "slow"), "non-empty"),
    (lambda p: profiling.range_stats(p, ["slow", "nope"]), r"\['nope'\] not in the profile.*'fast'"),
    (lambda p: profiling.largest_range(p, ["slow"], by="x"), "by must be one of"),
])
def test_profiler_errors(prof, call, match):
    with pytest.raises(ValueError, match=match):
        call(prof)


def test_op_stats_rejects_other_objects():
    with pytest.raises(TypeError, match="torch.profiler.profile"):
        profiling.op_stats("table")
    with pytest.raises(TypeError, match="torch.profiler.profile"):
        profiling.op_stats(3)


def test_chrome_trace_counts(prof, tmp_path):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    counts = profiling.trace_event_counts(path)
    assert counts["slow"] == 3 and counts["fast"] == 3
    assert "aten::std" not in counts
    assert profiling.trace_event_counts(path, category=None)["aten::std"] == 3 * ROWS


def test_chrome_trace_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        profiling.trace_event_counts(bad)
    bad.write_text(json.dumps({"events": []}))
    with pytest.raises(ValueError, match="traceEvents"):
        profiling.trace_event_counts(bad)


def test_cprofile_stats_names_without_paths():
    x = torch.randn(32, 4)
    pr = cProfile.Profile()
    pr.enable()
    _many_small(x)
    pr.disable()
    rows = profiling.cprofile_stats(pr, sort="calls")
    std = next(r for r in rows if "'std'" in r.name)
    assert std.calls == 32 and std.builtin
    assert std.callers in (("<listcomp>",), ("_many_small",))   # comprehensions inline from 3.12
    mine = next(r for r in rows if r.name == "_many_small")
    assert mine.where.startswith("test_profiling.py:") and "/" not in mine.where
    assert mine.cumtime >= mine.tottime >= 0
    assert rows == sorted(rows, key=lambda r: (-r.calls, r.name, r.where))
    assert profiling.cprofile_stats(pstats.Stats(pr))[0].tottime == max(r.tottime for r in rows)


def test_cprofile_errors():
    with pytest.raises(ValueError, match="sort must be"):
        profiling.cprofile_stats(cProfile.Profile(), sort="ncalls")
    with pytest.raises(ValueError, match="recorded nothing"):
        profiling.cprofile_stats(cProfile.Profile())
    with pytest.raises(TypeError, match="expected cProfile.Profile"):
        profiling.cprofile_stats("stats")
