"""Tests of tricks_helpers.bench.verdicts: intervals, verdicts, the printed lines and tables."""

import math
import random
import time

import pytest

from tricks_helpers import bench


def fake(label="fake", ratios=(1.2,) * 9, base=1e-3):
    """A Comparison with chosen per-round ratios (no timing)."""
    b = tuple(base for _ in ratios)
    return bench.Comparison(
        label=label,
        baseline=bench.Measurement(b, "cpu"),
        trick=bench.Measurement(tuple(base / r for r in ratios), "cpu"),
        ratios=tuple(ratios),
        threads=2,
    )


def test_measurement_statistics():
    m = bench.Measurement((1.0, 2.0, 3.0, 4.0, 100.0), "cpu")
    assert m.median == 3.0
    assert m.spread == pytest.approx((4.0 - 2.0) / 2)
    assert m.per_second(6) == pytest.approx(2.0)
    assert bench.Measurement((2.0,), "cpu").spread == 0.0


@pytest.mark.parametrize("n, k", [(1, 1), (5, 1), (6, 1), (9, 2), (15, 4), (31, 10)])
def test_median_interval_order_statistics(n, k):
    values = list(range(1, n + 1))
    lo, hi = bench.median_interval(values)
    assert (lo, hi) == (k, n + 1 - k)
    # the coverage of the chosen order statistics is at least 95% (or it is the full range)
    coverage = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n
    assert coverage >= 0.95 or (lo, hi) == (1, n)


def test_median_interval_contains_median_and_rejects_bad_input():
    vals = [1.3, 0.9, 1.1, 1.2, 1.25, 1.0, 5.0]
    lo, hi = bench.median_interval(vals)
    assert lo <= sorted(vals)[3] <= hi
    with pytest.raises(ValueError, match="no values"):
        bench.median_interval([])
    with pytest.raises(ValueError, match="confidence"):
        bench.median_interval([1.0], confidence=1.5)


@pytest.mark.parametrize(
    "lo, hi, verdict",
    [
        (1.15, 1.31, bench.FASTER),
        (1.10, 2.0, bench.FASTER),
        (1.09, 2.0, bench.NO_CLEAR_DIFFERENCE),
        (0.5, 1.5, bench.NO_CLEAR_DIFFERENCE),
        (0.5, 1 / 1.10, bench.SLOWER),
        (0.5, 0.92, bench.NO_CLEAR_DIFFERENCE),
        (12.0, math.inf, bench.FASTER),
    ],
)
def test_decide_uses_the_interval_and_one_threshold(lo, hi, verdict):
    assert bench.decide(lo, hi) == verdict


@pytest.mark.parametrize(
    "args, error",
    [
        ((0.0, 1.0), ValueError),
        ((1.0, 0.5), ValueError),
        ((1.0, 2.0, 1.0), ValueError),
        ((1.0, 2.0, float("nan")), ValueError),
        ((float("nan"), 2.0), ValueError),
        (("1", 2.0), TypeError),
    ],
)
def test_decide_rejects_bad_input(args, error):
    with pytest.raises(error):
        bench.decide(*args)


def test_printed_lines_sanitize_to_machine_independent_text(sanitize):
    a = fake(ratios=(1.2, 1.25, 1.3, 1.22, 1.18, 1.21))
    b = fake(ratios=(0.5, 0.52, 0.49, 0.51, 0.5, 0.55), base=0.3)
    assert a.verdict != b.verdict
    assert sanitize(str(a)) == sanitize(str(b))
    assert "VERDICT" in sanitize(a.line()) and "(DEVICE)" in sanitize(a.line())


def test_fmt_ratio_never_uses_exponents():
    assert [bench.fmt_ratio(r) for r in (0.123, 1.2345, 42.42, 12345.6)] == [
        "0.12",
        "1.23",
        "42.4",
        "12346",
    ]


def test_fmt_time_units_and_errors():
    assert bench.fmt_time(2.5) == "~2.5 s"
    assert bench.fmt_time(0.0123) == "~12.3 ms"
    assert bench.fmt_time(4.2e-6) == "~4.2 us"
    assert bench.fmt_time(3e-9) == "~3 ns"
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        bench.fmt_time(-1.0)
    with pytest.raises(ValueError, match="finite"):
        bench.fmt_time(float("nan"))


def _median_interval_reference(values, confidence=bench.CONFIDENCE):
    """The quadratic implementation this module had before issue 24, kept as the oracle."""
    xs = sorted(values)
    n = len(xs)

    def cdf(k):
        return sum(math.comb(n, i) for i in range(k + 1)) / 2**n

    k = 1
    while k < n // 2 and 1 - 2 * cdf(k) >= confidence:
        k += 1
    return xs[k - 1], xs[n - k]


def test_median_interval_matches_the_reference_on_random_inputs():
    rng = random.Random(24)
    for _ in range(400):
        n = rng.randint(1, 50)
        values = [rng.lognormvariate(0, 0.3) for _ in range(n)]
        if rng.random() < 0.3:
            values = [round(v, 1) for v in values]  # ties
        confidence = rng.choice([0.5, 0.8, 0.9, 0.95, 0.99, rng.uniform(0.01, 0.999)])
        assert bench.median_interval(values, confidence) == _median_interval_reference(
            values, confidence
        ), (n, confidence)


def test_median_interval_matches_the_reference_at_a_few_large_sizes():
    rng = random.Random(7)
    for n in (200, 513):
        values = [rng.random() for _ in range(n)]
        assert bench.median_interval(values) == _median_interval_reference(values)


def test_comparison_from_times_with_10000_rounds_is_fast():
    rng = random.Random(1)
    base = [1e-3 * (1 + rng.random()) for _ in range(10_000)]
    trick = [b / 1.5 for b in base]
    start = time.perf_counter()
    c = bench.comparison_from_times("per step", base, trick, show=False)
    line = c.line()
    took = time.perf_counter() - start
    assert line.startswith("FASTER 1.50x [1.50-1.50]")
    assert took < 2.0, f"took {took:.2f} s"


def test_comparison_interval_is_computed_once(monkeypatch):
    c = fake(ratios=(1.2, 1.3, 1.25, 1.22, 1.28, 1.21))
    first = c.interval
    monkeypatch.setattr(
        bench.verdicts, "median_interval", lambda *a: pytest.fail("interval recomputed")
    )
    assert c.interval is first and c.verdict == bench.FASTER and "1.2" in c.speedup_text()


def test_median_interval_refuses_nan():
    with pytest.raises(ValueError, match="values hold NaN"):
        bench.median_interval([1.0, float("nan"), 2.0])


@pytest.mark.parametrize("n", [2001, 2500, 3001, 4096])
def test_rank_in_floating_point_agrees_with_the_exact_sums_above_2000_values(n):
    for confidence in (0.5, 0.9, 0.95, 0.99):
        assert bench.intervals._rank_float(n, confidence) == bench.intervals._rank_exact(
            n, confidence
        )


def test_rank_falls_back_to_exact_sums_near_the_confidence(monkeypatch):
    monkeypatch.setattr(bench.intervals, "_MARGIN", 1.0)  # every coverage is "too close"
    bench.intervals._rank.cache_clear()
    try:
        assert bench.intervals._rank_float(2001, 0.95) is None
        assert bench.intervals._rank(2001, 0.95) == bench.intervals._rank_exact(2001, 0.95)
    finally:
        bench.intervals._rank.cache_clear()


def test_median_interval_refuses_a_string_and_non_numbers():
    with pytest.raises(TypeError, match="sequence of numbers"):
        bench.median_interval("x")  # once returned ('x', 'x')
    with pytest.raises(TypeError, match="must be numbers"):
        bench.median_interval([1.0, "2"])


@pytest.mark.parametrize("ratio", [-1.0, 0.0, float("inf"), float("nan")])
def test_fmt_ratio_refuses_what_no_speed_up_can_be(ratio):
    with pytest.raises(ValueError, match="finite and positive"):
        bench.fmt_ratio(ratio)


@pytest.mark.parametrize(
    "n, coverage, percent",
    [(1, 0.0, 0), (3, 0.75, 75), (5, 0.9375, 93), (6, 0.96875, 96), (9, 1 - 2 * 10 / 512, 96)],
)
def test_interval_coverage_is_exact_and_its_percent_never_rounds_up(n, coverage, percent):
    assert bench.interval_coverage(n) == pytest.approx(coverage, abs=1e-15)
    assert bench.coverage_percent(n) == percent


@pytest.mark.parametrize("n", [*range(1, 80), 500, 2500])
def test_coverage_is_that_of_the_order_statistics_median_interval_picks(n):
    values = list(range(1, n + 1))
    lo, hi = bench.median_interval(values)
    k = lo  # values are 1..n, so the lower end is the rank k
    assert hi == n + 1 - k
    exact = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n
    assert bench.interval_coverage(n) == pytest.approx(exact, abs=1e-12)
    assert bench.coverage_percent(n) <= 100 * exact < bench.coverage_percent(n) + 1
    assert (bench.coverage_percent(n) >= 95) == (n >= 6)


def test_coverage_rejects_bad_counts():
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        bench.interval_coverage(0)
    with pytest.raises(TypeError, match="n must be"):
        bench.coverage_percent(2.0)
    with pytest.raises(ValueError, match="confidence"):
        bench.interval_coverage(5, confidence=1.5)


def test_details_line_and_table_print_the_coverage_of_their_rounds(sanitize):
    five, six = fake(ratios=(1.2,) * 5), fake(ratios=(1.2,) * 6)
    assert (five.rounds, five.coverage) == (5, 0.9375)
    assert five.details().endswith("; 5 rounds, 93% interval")
    assert six.details().endswith("; 6 rounds, 96% interval")
    assert "93% interval" in sanitize(str(five))  # deterministic: compared as text
    lines = bench.table({"five": five, "six rounds": six}).splitlines()
    assert lines[0].split() == [
        "what",
        "baseline",
        "trick",
        "speed-up",
        "[interval]",
        "rounds",
        "covers",
        "verdict",
    ]
    assert lines[1].split()[-4:] == ["[1.20-1.20]", "5", "93%", "FASTER"]
    assert lines[2].split()[-3:] == ["6", "96%", "FASTER"]
