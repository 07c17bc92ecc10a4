"""Tests of tricks_helpers.bench.verdicts and .comparisons: intervals, verdicts, the printed lines
and tables."""

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


@pytest.mark.parametrize(
    "lo, hi, verdict",
    [
        (1.15, 1.31, bench.FASTER),
        (1.10, 2.0, bench.FASTER),
        (1.09, 2.0, bench.UNDECIDED),
        (0.5, 1.5, bench.UNDECIDED),
        (0.5, 1 / 1.10, bench.SLOWER),
        (0.5, 0.92, bench.UNDECIDED),
        (12.0, math.inf, bench.FASTER),
        # SAME: the whole interval inside [1/1.1, 1.1], its ends included
        (0.95, 1.05, bench.SAME),
        (1 / 1.10, 1.10 - 1e-12, bench.SAME),
        # the examples: an interval wholly below 1 but past 1/1.1 decides nothing
        (0.83, 0.97, bench.UNDECIDED),  # 01 seed-worker-cost, once "costs nothing: HELD"
        (0.89, 0.99, bench.UNDECIDED),  # 02 determinism-cost-cpu
        (0.79, 1.29, bench.UNDECIDED),  # 03 "the container changes no speed"
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


def test_four_verdicts_two_of_them_new_and_only_three_decided():
    assert bench.VERDICTS == ("FASTER", "SLOWER", "SAME", "UNDECIDED")
    assert bench.DECIDED == ("FASTER", "SLOWER", "SAME")
    assert not hasattr(bench, "NO_CLEAR_DIFFERENCE")
    for v in bench.VERDICTS:
        line = f"{v} 1.00x [0.95-1.05] x (cpu, 2 threads)"
        assert bench.VERDICT_LINE_RE.match(line).group("verdict") == v
    assert not bench.VERDICT_LINE_RE.match(
        "NO CLEAR DIFFERENCE 1.00x [0.95-1.05] x (cpu, 2 threads)"
    )


@pytest.mark.parametrize(
    "predicts, verdict, said, text",
    [
        ("FASTER", "FASTER", True, "(explains this verdict)"),
        ("SLOWER", "SLOWER", True, "(explains this verdict)"),
        ("SAME", "SAME", True, "(explains this verdict)"),
        # 03: "every batch copied to shared memory" predicts SLOWER: it explains a SLOWER row
        (
            "SLOWER",
            "FASTER",
            False,
            "(does not explain this verdict: predicts SLOWER, measured FASTER)",
        ),
        (
            "FASTER",
            "SLOWER",
            False,
            "(does not explain this verdict: predicts FASTER, measured SLOWER)",
        ),
        (
            "FASTER",
            "SAME",
            False,
            "(does not explain this verdict: predicts FASTER, measured SAME)",
        ),
        ("FASTER", "UNDECIDED", None, "(explains nothing yet: the verdict is UNDECIDED)"),
    ],
)
def test_a_partner_explains_the_verdict_it_predicts(predicts, verdict, said, text, sanitize):
    assert bench.explains(predicts, verdict) is said
    assert bench.explanation(predicts, verdict) == text
    assert sanitize(f"copies 64 {text}") == "copies 64"  # decided by a measurement: removed


def test_explains_refuses_unknown_directions_and_verdicts():
    with pytest.raises(ValueError, match="predicts must be one of"):
        bench.explains("UNDECIDED", "FASTER")
    with pytest.raises(ValueError, match="verdict must be one of"):
        bench.explains("FASTER", "NO CLEAR DIFFERENCE")
    with pytest.raises(ValueError, match="predicts must be one of"):
        bench.Comparison("x", M, M, (1.0,), threads=1, predicts="QUICKER")
    with pytest.raises(ValueError, match="predicts must be one of"):
        bench.comparison_from_times("x", [1.0], [1.0], show=False, predicts="faster")


M = bench.Measurement((1e-3,), "cpu")


def test_a_comparisons_partner_direction_decides_its_explanation():
    slower = bench.comparison_from_times(
        "x", [1e-3] * 6, [2e-3] * 6, show=False, why="copies 64", predicts="SLOWER"
    )
    assert slower.verdict == bench.SLOWER and slower.explained() == "(explains this verdict)"
    default = bench.comparison_from_times("x", [1e-3] * 6, [2e-3] * 6, show=False, why="w")
    assert default.predicts == bench.FASTER
    assert default.explained().startswith("(does not explain this verdict")


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
        bench.comparisons, "median_interval", lambda *a: pytest.fail("interval recomputed")
    )
    assert c.interval is first and c.verdict == bench.FASTER and "1.2" in c.speedup_text()


@pytest.mark.parametrize("ratio", [-1.0, 0.0, float("inf"), float("nan")])
def test_fmt_ratio_refuses_what_no_speed_up_can_be(ratio):
    with pytest.raises(ValueError, match="finite and positive"):
        bench.fmt_ratio(ratio)


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
