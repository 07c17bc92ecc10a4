"""Tests of tricks_helpers.profiling (profiler tables, cProfile runs) and .traces (trace files)."""

from __future__ import annotations

import cProfile
import gzip
import json
import os
import pstats

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from tricks_helpers import profiling, traces

ROWS = 256


def _many_small(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([r.std() for r in x])


def _record(rows: int = ROWS):
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # no start/stop lines on stderr
    x = torch.randn(rows, 8)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        for _ in range(3):
            with record_function("slow"):
                _many_small(x)
            with record_function("fast"):  # one tiny op vs ROWS of them: robust under load
                x.neg()
    return p


@pytest.fixture(scope="module")
def prof():
    return _record()


@pytest.fixture(scope="module")
def trace_path(prof, tmp_path_factory):
    """The fixture profile as a Chrome trace (a profile can be exported only once)."""
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    prof.export_chrome_trace(str(path))
    return path


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


def test_range_durations_one_per_occurrence(prof):
    durations = profiling.range_durations(prof, ["fast", "slow"])
    assert list(durations) == ["fast", "slow"]
    assert [len(d) for d in durations.values()] == [3, 3]
    assert all(d > 0 for ds in durations.values() for d in ds)
    assert sum(durations["slow"]) == pytest.approx(
        profiling.range_stats(prof, ["slow"])["slow"].cpu_total_us, rel=1e-6
    )
    assert profiling.range_durations(prof.events(), ["slow"]) == {"slow": durations["slow"]}
    with pytest.raises(ValueError, match=r"\['nope'\] not in the profile"):
        profiling.range_durations(prof, ["slow", "nope"])
    with pytest.raises(TypeError, match="key_averages"):
        profiling.range_durations(prof.key_averages(), ["slow"])
    with pytest.raises(TypeError, match="names must be a sequence"):
        profiling.range_durations(prof, "slow")


def _cuda_profile_events():
    """Events as a CUDA profile holds them (issue 33), faked: no GPU needed.

    Each of three ``"step"`` ranges is recorded on the host (``DeviceType.CPU``, 100 us) and,
    because it launched GPU work, again as a device-side ``gpu_user_annotation`` of the same
    name (``DeviceType.CUDA``, 450 us, on the GPU's stream), as ``ProfilerActivity.CUDA`` does.
    """
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import EventList, FunctionEvent

    events = []
    for k in range(3):
        t = 1000 * k
        for i, (device, start, end) in enumerate(
            [(DeviceType.CPU, t, t + 100), (DeviceType.CUDA, t + 50, t + 500)]
        ):
            events.append(
                FunctionEvent(
                    id=2 * k + i,
                    name="step",
                    thread=1 if device == DeviceType.CPU else 7,
                    start_us=start,
                    end_us=end,
                    stack=[],
                    device_type=device,
                    is_user_annotation=True,
                )
            )
    out = EventList(events)
    out._build_tree()
    return out


def test_ranges_of_a_cuda_profile_are_read_on_the_host():
    events = _cuda_profile_events()
    assert profiling.range_durations(events, ["step"]) == {"step": [100.0, 100.0, 100.0]}
    row = profiling.range_stats(events.key_averages(), ["step"])["step"]
    assert (row.calls, row.cpu_total_us, row.device) == (3, 300.0, "cpu")
    devices = sorted(r.device for r in profiling.op_stats(events) if r.name == "step")
    assert devices == ["cpu", "cuda"]  # op_stats keeps both rows, marked
    assert profiling.largest_range(events.key_averages(), ["step"]) == "step"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda p: profiling.top_ops(p, by="wall"), "by must be one of"),
        (lambda p: profiling.top_ops(p, n=0), "n must be"),
        (lambda p: profiling.range_stats(p, []), "non-empty"),
        (
            lambda p: profiling.range_stats(p, ["slow", "nope"]),
            r"\['nope'\] not in the profile.*'fast'",
        ),
        (lambda p: profiling.largest_range(p, ["slow"], by="x"), "by must be one of"),
    ],
)
def test_profiler_errors(prof, call, match):
    with pytest.raises(ValueError, match=match):
        call(prof)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda p: profiling.top_ops(p, n=2.0), "n must be an integer"),
        (lambda p: profiling.top_ops(p, n=True), "n must be an integer"),
        (
            lambda p: profiling.top_ops(p, include_ranges="yes"),
            "include_ranges must be True or False",
        ),
        (lambda p: profiling.range_stats(p, "slow"), "names must be a sequence of range names"),
        (lambda p: profiling.range_stats(p, ["slow", 3]), r"names\[1\] must be str"),
        (lambda p: profiling.largest_range(p, "slow"), "names must be a sequence"),
        (lambda p: traces.trace_event_counts(3), "path must be str or PathLike"),
        (lambda p: traces.trace_event_counts("t.json", category=3), "category must be str"),
        (lambda p: traces.trace_spans(3), "path must be str or PathLike"),
        (lambda p: profiling.top_ops(p, by=1), "by must be str"),
        (lambda p: profiling.largest_range(p, ["slow"], by=None), "by must be str"),
        (lambda p: profiling.cprofile_stats(cProfile.Profile(), sort=2), "sort must be str"),
    ],
)
def test_profiler_type_errors(prof, call, match):
    with pytest.raises(TypeError, match=match):
        call(prof)


def test_op_stats_rejects_other_objects():
    with pytest.raises(TypeError, match="torch.profiler.profile"):
        profiling.op_stats("table")
    with pytest.raises(TypeError, match="torch.profiler.profile"):
        profiling.op_stats(3)


def test_chrome_trace_counts(trace_path):
    path = trace_path
    counts = traces.trace_event_counts(path)
    assert counts["slow"] == 3 and counts["fast"] == 3
    assert "aten::std" not in counts
    assert traces.trace_event_counts(path, category=None)["aten::std"] == 3 * ROWS


def test_gzip_chrome_trace_is_read(tmp_path):
    """export_chrome_trace writes gzip for a .gz path; the readers must read it back."""
    plain, packed = tmp_path / "trace.json", tmp_path / "trace.json.gz"
    _record(rows=8).export_chrome_trace(str(packed))
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    assert traces.trace_event_counts(plain)["slow"] == 3
    assert traces.trace_event_counts(packed) == traces.trace_event_counts(plain)
    assert traces.trace_spans(packed) == traces.trace_spans(plain)
    renamed = tmp_path / "trace_gz_without_suffix.json"  # detected by content, not by name
    renamed.write_bytes(packed.read_bytes())
    assert traces.trace_event_counts(renamed) == traces.trace_event_counts(plain)


def test_chrome_trace_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json is not JSON"):
        traces.trace_event_counts(bad)
    bad.write_text(json.dumps({"events": []}))
    with pytest.raises(ValueError, match="traceEvents"):
        traces.trace_event_counts(bad)
    bad.write_bytes(b"\xff\xfe\x00\x01binary")
    with pytest.raises(ValueError, match="bad.json is not a UTF-8 JSON"):
        traces.trace_event_counts(bad)
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(gzip.compress(b'{"traceEvents": []}')[:-6])
    with pytest.raises(ValueError, match="cut.json.gz is a damaged gzip file"):
        traces.trace_event_counts(truncated)
    bad.write_text(json.dumps({"traceEvents": 3}))
    with pytest.raises(ValueError, match="traceEvents"):
        traces.trace_spans(bad)


def test_trace_spans_timeline(trace_path):
    path = trace_path
    spans = traces.trace_spans(path)
    assert [s.name for s in spans] == ["slow", "fast"] * 3  # in time order
    assert spans[0].start_us == 0.0  # relative to the first
    assert all(s.duration_us >= 0 for s in spans)
    for a, b in zip(spans, spans[1:]):  # one thread: no overlap
        assert a.start_us + a.duration_us <= b.start_us + 1e-3
    only_fast = traces.trace_spans(path, names=["fast"])
    assert [s.name for s in only_fast] == ["fast"] * 3
    assert only_fast[0].start_us == spans[1].start_us  # same time origin
    ops = traces.trace_spans(path, category="cpu_op", names=["aten::neg"])
    assert len(ops) == 3 and {s.category for s in ops} == {"cpu_op"}
    everything = traces.trace_spans(path, category=None, names=["slow", "aten::neg"])
    assert {(s.name, s.category) for s in everything} == {
        ("slow", "user_annotation"),
        ("aten::neg", "cpu_op"),
    }
    with pytest.raises(ValueError, match=r"no events named \['nope'\]"):
        traces.trace_spans(path, names=["nope"])


def test_cprofile_stats_names_without_paths():
    x = torch.randn(32, 4)
    pr = cProfile.Profile()
    pr.enable()
    _many_small(x)
    pr.disable()
    rows = profiling.cprofile_stats(pr, sort="calls")
    std = next(r for r in rows if "'std'" in r.name)
    assert std.calls == 32 and std.builtin
    assert std.callers in (("<listcomp>",), ("_many_small",))  # comprehensions inline from 3.12
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
