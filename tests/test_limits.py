"""Tests of tricks_helpers.limits (the machine's limits) and charts.roofline_chart."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from tricks_helpers import charts, limits
from tricks_helpers.limits import probes


def write_cache(root, index, level, kind, size):
    d = root / f"index{index}"
    d.mkdir()
    (d / "level").write_text(f"{level}\n")
    (d / "type").write_text(f"{kind}\n")
    (d / "size").write_text(f"{size}\n")


def test_last_level_cache_reads_the_highest_data_level(tmp_path):
    write_cache(tmp_path, 0, 1, "Data", "32K")
    write_cache(tmp_path, 1, 1, "Instruction", "64K")
    write_cache(tmp_path, 2, 2, "Unified", "512K")
    write_cache(tmp_path, 3, 3, "Unified", "8192K")
    assert limits.last_level_cache(tmp_path) == (8 * 2**20, "sysfs L3")


def test_last_level_cache_skips_instruction_and_unreadable_entries(tmp_path):
    write_cache(tmp_path, 0, 2, "Unified", "1M")
    write_cache(tmp_path, 1, 4, "Instruction", "64M")  # not a data cache
    write_cache(tmp_path, 2, 3, "Unified", "lots")  # unparseable
    assert limits.last_level_cache(tmp_path) == (2**20, "sysfs L2")


def test_last_level_cache_falls_back_where_nothing_is_readable(tmp_path):
    size, source = limits.last_level_cache(tmp_path / "missing")
    assert size == limits.FALLBACK_CACHE_BYTES and source.startswith("fallback")


def test_measure_bandwidth_is_positive_and_checks_arguments():
    assert limits.measure_bandwidth(2**20, budget_s=0.05) > 1e6  # over 1 MB/s on any machine
    with pytest.raises(ValueError, match="buffer_bytes must be an integer >= 65536"):
        limits.measure_bandwidth(1024)
    with pytest.raises(TypeError, match="buffer_bytes must be an integer"):
        limits.measure_bandwidth(2.0**20)
    with pytest.raises(ValueError, match="budget_s must be > 0"):
        limits.measure_bandwidth(2**20, budget_s=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_measure_matmul_stays_at_the_smallest_size_with_a_tiny_budget(dtype):
    rate, n = limits.measure_matmul(dtype, budget_s=1e-6, max_size=4096)
    assert n == 128 and rate > 0


def test_measure_matmul_grows_to_max_size_with_a_large_budget(monkeypatch):
    tried = []
    real = probes._matmul_call
    monkeypatch.setattr(probes, "_matmul_call", lambda d, n: tried.append(n) or real(d, n))
    rate, n = limits.measure_matmul(torch.float32, budget_s=50.0, max_size=256)
    assert tried[-1] == 256 and n in (128, 256) and rate > 0


def test_measure_matmul_returns_the_best_rate_over_the_sizes_tried(monkeypatch):
    # 2 n^3 operations; seconds per call chosen so that 256 is the fastest size per FLOP
    seconds = {128: 2 * 128**3 / 1e9, 256: 2 * 256**3 / 4e9, 512: 2 * 512**3 / 2e9}
    monkeypatch.setattr(probes, "_matmul_call", lambda dtype, n: n)
    monkeypatch.setattr(probes, "_best_seconds", lambda n, repeats: seconds[n])
    monkeypatch.setattr(probes, "_repeats_within", lambda one, left: 1)
    rate, n = limits.measure_matmul(torch.bfloat16, budget_s=100.0, max_size=512)
    assert (round(rate), n) == (4_000_000_000, 256)  # not the 2 GFLOP/s of the last size


def test_measure_matmul_refuses_bad_arguments():
    with pytest.raises(TypeError, match="dtype must be"):
        limits.measure_matmul("float32")
    with pytest.raises(ValueError, match="dtype must be one of"):
        limits.measure_matmul(torch.float64)
    with pytest.raises(ValueError, match="budget_s must be > 0"):
        limits.measure_matmul(torch.float32, budget_s=-1.0)
    with pytest.raises(ValueError, match="max_size must be an integer >= 128"):
        limits.measure_matmul(torch.float32, max_size=64)


def test_measure_limits_lines_name_every_dtype(tmp_path):
    write_cache(tmp_path, 0, 3, "Unified", "1M")
    lim = limits.measure_limits(["float32", "int8"], budget_s=0.2, sysfs=tmp_path)
    assert lim.cache_bytes == 2**20 and lim.buffer_bytes == 32 * 2**20
    assert lim.threads == torch.get_num_threads() and lim.bandwidth > 0
    assert set(lim.matmul) | set(lim.skipped) == {"float32", "int8"}
    lines = lim.lines()
    assert all(line.startswith("[hardware] ") for line in lines)
    assert any("matmul float32 (" in line and "GFLOP/s" in line for line in lines)
    assert any(line.startswith("[hardware] matmul int8") for line in lines)


def test_measure_limits_refuses_bad_arguments():
    with pytest.raises(ValueError, match="unknown dtype 'float64'"):
        limits.measure_limits(["float64"])
    with pytest.raises(TypeError, match="dtype name must be"):
        limits.measure_limits([torch.float32])
    with pytest.raises(ValueError, match="no dtypes"):
        limits.measure_limits([])
    with pytest.raises(ValueError, match="budget_s must be > 0"):
        limits.measure_limits(budget_s=0.0)


def test_percent_of_limits_are_ratios_to_the_measured_limits(make_limits):
    lim = make_limits()
    assert lim.percent_of_bandwidth(5e9, 1.0) == pytest.approx(50.0)
    assert lim.percent_of_matmul("float32", 25e9, 0.5) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="no measured limit for 'int8'"):
        lim.percent_of_matmul("int8", 1.0, 1.0)
    with pytest.raises(ValueError, match="seconds must be > 0"):
        lim.percent_of_bandwidth(1.0, 0.0)
    with pytest.raises(ValueError, match="seconds must be > 0"):
        lim.percent_of_matmul("float32", 1.0, 0.0)


def test_lines_print_skipped_dtypes_with_their_reason():
    lim = limits.Limits(1, 2**20, "fallback", 2**25, 1e9, {}, {}, {"int8": "no _int_mm"})
    assert lim.lines()[-1] == "[hardware] matmul int8: not measured (no _int_mm)"
    assert "~1 GB/s" in lim.lines()[1]


def test_roofline_chart_draws_each_roof_and_point():
    fig = charts.roofline_chart(
        10e9, {"float32": 100e9, "bfloat16": 20e9}, {"a": (0.5, 4e9), "b": (30.0, 60e9)}
    )
    ax = fig.axes[0]
    assert len(ax.lines) == 1 + 2 + 2  # bandwidth roof, two peaks, two points
    assert [t.get_text() for t in ax.texts] == ["a", "b"]
    flat = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert sorted(line.get_ydata()[0] for line in flat) == [20.0, 100.0]
    plt.close(fig)


def test_roofline_chart_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one peak and one point"):
        charts.roofline_chart(1e9, {}, {"a": (1.0, 1e9)})
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        charts.roofline_chart(0.0, {"x": 1e9}, {"a": (1.0, 1e9)})
    with pytest.raises(ValueError, match=r"point 'a' must be \(intensity, ops/s\[, dtype\]\)"):
        charts.roofline_chart(1e9, {"x": 1e9}, {"a": (1.0,)})
    with pytest.raises(TypeError, match="peaks must be"):
        charts.roofline_chart(1e9, [1e9], {"a": (1.0, 1e9)})


@pytest.mark.parametrize("size", ["0K", "0", "0M"])
def test_last_level_cache_never_reports_a_cache_of_zero_bytes(tmp_path, size):
    write_cache(tmp_path, 0, 1, "Data", "32K")
    write_cache(tmp_path, 3, 3, "Unified", size)  # an L3 of 0 bytes: not a cache size
    assert limits.last_level_cache(tmp_path) == (32 * 2**10, "sysfs L1")


@pytest.mark.parametrize(
    ("field", "value", "error", "match"),
    [
        ("bandwidth", 0.0, ValueError, "Limits: bandwidth must be"),
        ("bandwidth", float("nan"), ValueError, "bandwidth"),
        ("matmul", {"float32": 0.0}, ValueError, r"Limits: matmul\['float32'\] must be"),
        ("cache_bytes", 0, ValueError, "Limits: cache_bytes must be"),
        ("buffer_bytes", 0, ValueError, "Limits: buffer_bytes must be"),
        ("threads", 0, ValueError, "Limits: threads must be"),
        ("threads", "2", TypeError, "Limits: threads must be"),
        ("matmul_size", {"float32": 0}, ValueError, r"matmul_size\['float32'\]"),
    ],
)
def test_limits_refuse_values_no_measurement_gives(make_limits, field, value, error, match):
    with pytest.raises(error, match=match):
        make_limits(**{field: value})


def test_roofline_chart_refuses_a_point_above_the_roof_of_its_dtype():
    # chapter 07's old chart: an int8 point far above the int8 probe's roof (and the bf16 one)
    peaks = {"float32": 70e9, "int8": 2.8e9}
    with pytest.raises(ValueError, match=r"point 'int8, b64' .* above its roof"):
        charts.roofline_chart(16e9, peaks, {"int8, b64": (250.0, 66e9, "int8")})
    with pytest.raises(ValueError, match=r"point 'x' .* above its roof"):  # above the slope
        charts.roofline_chart(16e9, peaks, {"x": (0.25, 5e9, "float32")})
    with pytest.raises(ValueError, match=r"point 'y' .* above its roof"):  # no dtype: highest
        charts.roofline_chart(16e9, peaks, {"y": (250.0, 71e9)})
    with pytest.raises(ValueError, match="dtype 'int4', which has no peak"):
        charts.roofline_chart(16e9, peaks, {"z": (1.0, 1e9, "int4")})
    fig = charts.roofline_chart(16e9, peaks, {"int8, b64": (250.0, 2.8e9, "int8")})  # on it
    assert [t.get_text() for t in fig.axes[0].texts] == ["int8, b64"]
    plt.close(fig)


# limits.Limits.raised: a limit is the highest rate reached here, never one a kernel beats.
@pytest.fixture
def probe(make_limits):
    return lambda: make_limits(
        matmul={"float32": 100e9, "bfloat16": 2e9}, matmul_size={"float32": 2048, "bfloat16": 128}
    )


def test_a_faster_page_rate_raises_its_limit_and_says_so(probe):
    lim = probe().raised("the block", matmul={"bfloat16": 10e9, "float32": 50e9}, bandwidth=12e9)
    assert lim.matmul == {"float32": 100e9, "bfloat16": 10e9}
    assert lim.bandwidth == 12e9
    assert lim.raised_by == {"bfloat16": "the block", "bandwidth": "the block"}
    assert lim.percent_of_matmul("bfloat16", 10e9, 1.0) == pytest.approx(100.0)
    assert "[hardware] bfloat16 limit raised to the rate of the block (faster than the probe)" in (
        lim.lines()
    )
    assert probe().raised_by == {}  # the original is unchanged


def test_rates_at_or_below_the_limits_change_nothing(probe):
    lim = probe().raised("x", matmul={"float32": 100e9}, bandwidth=1e9)
    assert lim == probe()


def test_no_percentage_above_100_after_raising(probe):
    rates = {"float32": 250e9, "bfloat16": 0.5e9}
    lim = probe().raised("page", matmul=rates)
    for name, rate in rates.items():
        assert lim.percent_of_matmul(name, rate, 1.0) <= 100.0


def test_raised_refuses_bad_input(probe):
    with pytest.raises(ValueError, match="no measured limit for 'int8'"):
        probe().raised("x", matmul={"int8": 1e9})
    with pytest.raises(ValueError, match="bandwidth"):
        probe().raised("x", bandwidth=0.0)
    with pytest.raises(TypeError, match="matmul"):
        probe().raised("x", matmul=[("float32", 1e9)])
    with pytest.raises(TypeError, match="source"):
        probe().raised(3, matmul={})


# ---- issue 39: the book's Linear paths, and the record a results file stores
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
def test_measure_linear_times_the_books_layer_paths(dtype):
    rate, shape = limits.measure_linear(dtype, budget_s=1e-3, shapes=[(4, 64, 128)])
    assert rate > 0 and shape == "Linear 4x64->128"
    with pytest.raises(ValueError, match="must be one of"):
        limits.measure_linear(torch.float64)
    with pytest.raises(ValueError, match="no shapes"):
        limits.measure_linear(torch.float32, shapes=[])


def test_a_record_round_trips_and_names_the_kernel(make_limits):
    lim = make_limits(where={"float32": "Linear 64x1024->4096"})
    back = limits.Limits.from_record(lim.record(), "recorded for this machine (x)")
    assert back.matmul == lim.matmul and back.bandwidth == lim.bandwidth
    assert back.lines()[2] == "[hardware] matmul float32 (Linear 64x1024->4096): ~100 GFLOP/s"
    assert lim.record()["probe"] == limits.PROBE_VERSION
    with pytest.raises(ValueError, match="lacks"):
        limits.Limits.from_record({"threads": 2})
