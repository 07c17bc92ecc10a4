"""Tests of tricks_helpers.bench: timing, verdicts and the fixed-format line."""

import re
import time
from pathlib import Path

import pytest
import torch

from tricks_helpers import bench


def sanitize(text: str) -> str:
    cfg = (Path(__file__).resolve().parent.parent / "nbval_sanitize.cfg").read_text()
    for regex, repl in re.findall(r"^regex: (.*)$\n^replace: (.*)$", cfg, flags=re.M):
        text = re.sub(regex, repl, text)
    return text


def sleeper(seconds):
    return lambda: time.sleep(seconds)


def test_measure_counts_warmup_and_repeats():
    calls = []
    m = bench.measure(lambda: calls.append(1), repeats=5, number=3, warmup=2, device="cpu")
    assert len(calls) == 2 + 5 * 3
    assert len(m.times) == 5 and m.device == "cpu"
    assert m.median >= 0 and m.spread >= 0


def test_measure_times_sleep_roughly():
    m = bench.measure(sleeper(0.01), repeats=3, warmup=0)
    assert 0.009 < m.median < 0.1


def test_measurement_statistics():
    m = bench.Measurement((1.0, 2.0, 3.0, 4.0, 100.0), "cpu")
    assert m.median == 3.0
    assert m.spread == pytest.approx((4.0 - 2.0) / 2)
    assert m.per_second(6) == pytest.approx(2.0)
    assert bench.Measurement((2.0,), "cpu").spread == 0.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(repeats=0), "repeats must be an integer >= 1"),
    (dict(number=0), "number must be an integer >= 1"),
    (dict(warmup=-1), "warmup must be an integer >= 0"),
    (dict(repeats=2.5), "repeats must be an integer"),
    (dict(repeats=True), "repeats must be an integer"),
])
def test_measure_rejects_bad_counts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench.measure(lambda: None, **kwargs)


def test_measure_rejects_non_callable():
    with pytest.raises(ValueError, match="fn must be callable"):
        bench.measure(42)


@pytest.mark.parametrize("ratio, verdict", [
    (2.0, bench.FASTER), (1.15, bench.FASTER), (1.14, bench.NO_CLEAR_DIFFERENCE),
    (1.0, bench.NO_CLEAR_DIFFERENCE), (0.87, bench.NO_CLEAR_DIFFERENCE), (0.86, bench.SLOWER),
])
def test_decide(ratio, verdict):
    assert bench.decide(ratio, 1.15) == verdict


@pytest.mark.parametrize("ratio, threshold, match", [
    (1.0, 1.0, "threshold must be > 1"), (0.0, 1.2, "ratio must be a positive"),
    (float("nan"), 1.2, "ratio must be a positive"),
])
def test_decide_rejects_bad_input(ratio, threshold, match):
    with pytest.raises(ValueError, match=match):
        bench.decide(ratio, threshold)


def test_compare_finds_a_clear_speedup(capsys):
    result = bench.compare("sleep 20 ms vs 2 ms", sleeper(0.02), sleeper(0.002),
                           repeats=3, warmup=1, device="cpu")
    assert result.verdict == bench.FASTER
    assert result.ratio > 3
    line = capsys.readouterr().out.strip()
    assert line == result.line()
    assert sanitize(line) == ("[bench] sleep 20 ms vs 2 ms: baseline ~N, trick ~N, speed-up ~Nx "
                              "[DEVICE] -> FASTER")


def test_compare_finds_a_slowdown_and_can_stay_quiet(capsys):
    result = bench.compare("slow", sleeper(0.002), sleeper(0.02), repeats=3, warmup=0,
                           show=False)
    assert result.verdict == bench.SLOWER
    assert capsys.readouterr().out == ""


def test_compare_interleaves_rounds():
    order = []
    bench.compare("order", lambda: order.append("b"), lambda: order.append("t"),
                  repeats=4, warmup=1, show=False)
    assert order == ["b", "t", "b", "t", "t", "b", "b", "t", "t", "b"]


def test_compare_uses_device_threshold():
    result = bench.compare("same", lambda: None, lambda: None, repeats=3, show=False, device="cpu")
    assert result.threshold == bench.MIN_SPEEDUP["cpu"]
    assert result.threads == torch.get_num_threads()
    assert bench.compare("t", lambda: None, lambda: None, repeats=1, show=False,
                         threshold=3.0).threshold == 3.0


@pytest.mark.parametrize("args, kwargs, match", [
    (("", lambda: None, lambda: None), {}, "label must be a non-empty string"),
    (("x", None, lambda: None), {}, "baseline must be callable"),
    (("x", lambda: None, "f"), {}, "trick must be callable"),
    (("x", lambda: None, lambda: None), dict(threshold=0.9), "threshold must be > 1"),
    (("x", lambda: None, lambda: None), dict(repeats=0), "repeats must be"),
    (("x", lambda: None, lambda: None), dict(device="meta"), "unsupported device type"),
])
def test_compare_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench.compare(*args, **kwargs)


@pytest.mark.parametrize("seconds, text", [
    (2.5, "~2.5 s"), (0.0123, "~12.3 ms"), (4.56e-5, "~45.6 us"), (7e-9, "~7 ns"), (0.0, "~0 ns"),
])
def test_fmt_time(seconds, text):
    assert bench.fmt_time(seconds) == text
    assert sanitize(text) == "~N"


def test_fmt_time_rejects_negative():
    with pytest.raises(ValueError, match="negative duration"):
        bench.fmt_time(-1.0)


def test_fmt_measured_is_masked_but_units_other_than_time_stay():
    assert bench.fmt_measured(3.14159) == "~3.14"
    assert sanitize(f"{bench.fmt_measured(12.5)} MB saved, {bench.fmt_measured(1.4)}x") == "~N MB saved, ~Nx"


def test_device_class():
    assert bench.device_class("cpu") == "cpu"
    assert bench.device_class(torch.device("cuda", 0)) == "cuda"
    assert bench.device_class() in ("cpu", "cuda")
