"""Tests of tricks_helpers.bench.intervals: the interval of a median and its exact coverage."""

import math
import random

import pytest

from tricks_helpers import bench
from tricks_helpers.bench import intervals


def test_the_face_hands_on_the_interval_names():
    assert bench.median_interval is intervals.median_interval
    assert bench.CONFIDENCE == intervals.CONFIDENCE == 0.95


@pytest.mark.parametrize("confidence", [0, 0.0, 1.0001, -0.5, float("nan")])
def test_median_interval_refuses_a_confidence_outside_zero_one(confidence):
    with pytest.raises(ValueError, match="confidence"):
        intervals.median_interval([1.0, 2.0, 3.0], confidence=confidence)


def test_median_interval_of_one_value_and_of_a_tuple():
    assert intervals.median_interval([4.0]) == (4.0, 4.0)
    values = (3.0, 1.0, 2.0, 5.0, 4.0, 6.0)
    assert intervals.median_interval(values) == (1.0, 6.0)  # 6 values: ranks 1 and 6
    with pytest.raises(TypeError, match="must be numbers"):
        intervals.median_interval([1.0, True])


def test_a_wider_confidence_never_narrows_the_interval():
    values = [float(v) for v in range(1, 101)]
    lo90, hi90 = intervals.median_interval(values, 0.90)
    lo99, hi99 = intervals.median_interval(values, 0.99)
    assert lo99 <= lo90 <= 50.5 <= hi90 <= hi99
    assert intervals.interval_coverage(100, 0.99) >= 0.99 > intervals.interval_coverage(100, 0.9)


@pytest.mark.parametrize("n, k", [(1, 1), (5, 1), (6, 1), (9, 2), (15, 4), (31, 10)])
def test_median_interval_order_statistics(n, k):
    values = list(range(1, n + 1))
    lo, hi = intervals.median_interval(values)
    assert (lo, hi) == (k, n + 1 - k)
    # the coverage of the chosen order statistics is at least 95% (or it is the full range)
    coverage = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n
    assert coverage >= 0.95 or (lo, hi) == (1, n)


def test_median_interval_contains_median_and_rejects_bad_input():
    vals = [1.3, 0.9, 1.1, 1.2, 1.25, 1.0, 5.0]
    lo, hi = intervals.median_interval(vals)
    assert lo <= sorted(vals)[3] <= hi
    with pytest.raises(ValueError, match="no values"):
        intervals.median_interval([])
    with pytest.raises(ValueError, match="confidence"):
        intervals.median_interval([1.0], confidence=1.5)


def _median_interval_reference(values, confidence=intervals.CONFIDENCE):
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
        assert intervals.median_interval(values, confidence) == _median_interval_reference(
            values, confidence
        ), (n, confidence)


def test_median_interval_matches_the_reference_at_a_few_large_sizes():
    rng = random.Random(7)
    for n in (200, 513):
        values = [rng.random() for _ in range(n)]
        assert intervals.median_interval(values) == _median_interval_reference(values)


def test_median_interval_refuses_nan():
    with pytest.raises(ValueError, match="values hold NaN"):
        intervals.median_interval([1.0, float("nan"), 2.0])


@pytest.mark.parametrize("n", [2001, 2500, 3001, 4096])
def test_rank_in_floating_point_agrees_with_the_exact_sums_above_2000_values(n):
    for confidence in (0.5, 0.9, 0.95, 0.99):
        assert intervals._rank_float(n, confidence) == intervals._rank_exact(n, confidence)


def test_rank_falls_back_to_exact_sums_near_the_confidence(monkeypatch):
    monkeypatch.setattr(intervals, "_MARGIN", 1.0)  # every coverage is "too close"
    intervals._rank.cache_clear()
    try:
        assert intervals._rank_float(2001, 0.95) is None
        assert intervals._rank(2001, 0.95) == intervals._rank_exact(2001, 0.95)
    finally:
        intervals._rank.cache_clear()


def test_median_interval_refuses_a_string_and_non_numbers():
    with pytest.raises(TypeError, match="sequence of numbers"):
        intervals.median_interval("x")  # once returned ('x', 'x')
    with pytest.raises(TypeError, match="must be numbers"):
        intervals.median_interval([1.0, "2"])


@pytest.mark.parametrize(
    "n, coverage, percent",
    [(1, 0.0, 0), (3, 0.75, 75), (5, 0.9375, 93), (6, 0.96875, 96), (9, 1 - 2 * 10 / 512, 96)],
)
def test_interval_coverage_is_exact_and_its_percent_never_rounds_up(n, coverage, percent):
    assert intervals.interval_coverage(n) == pytest.approx(coverage, abs=1e-15)
    assert intervals.coverage_percent(n) == percent


@pytest.mark.parametrize("n", [*range(1, 80), 500, 2500])
def test_coverage_is_that_of_the_order_statistics_median_interval_picks(n):
    values = list(range(1, n + 1))
    lo, hi = intervals.median_interval(values)
    k = lo  # values are 1..n, so the lower end is the rank k
    assert hi == n + 1 - k
    exact = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n
    assert intervals.interval_coverage(n) == pytest.approx(exact, abs=1e-12)
    assert intervals.coverage_percent(n) <= 100 * exact < intervals.coverage_percent(n) + 1
    assert (intervals.coverage_percent(n) >= 95) == (n >= 6)


def test_coverage_rejects_bad_counts():
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        intervals.interval_coverage(0)
    with pytest.raises(TypeError, match="n must be"):
        intervals.coverage_percent(2.0)
    with pytest.raises(ValueError, match="confidence"):
        intervals.interval_coverage(5, confidence=1.5)
