"""limits.Limits.raised: a limit is the highest rate reached here, never one a kernel beats."""

from __future__ import annotations

import pytest

from tricks_helpers import limits


def probe():
    return limits.Limits(
        2,
        2**23,
        "sysfs L3",
        2**25,
        10e9,
        {"float32": 100e9, "bfloat16": 2e9},
        {"float32": 2048, "bfloat16": 128},
    )


def test_a_faster_page_rate_raises_its_limit_and_says_so():
    lim = probe().raised("the block", matmul={"bfloat16": 10e9, "float32": 50e9}, bandwidth=12e9)
    assert lim.matmul == {"float32": 100e9, "bfloat16": 10e9}
    assert lim.bandwidth == 12e9
    assert lim.raised_by == {"bfloat16": "the block", "bandwidth": "the block"}
    assert lim.percent_of_matmul("bfloat16", 10e9, 1.0) == pytest.approx(100.0)
    assert "[hardware] bfloat16 limit raised to the rate of the block (faster than the probe)" in (
        lim.lines()
    )
    assert probe().raised_by == {}  # the original is unchanged


def test_rates_at_or_below_the_limits_change_nothing():
    lim = probe().raised("x", matmul={"float32": 100e9}, bandwidth=1e9)
    assert lim == probe()


def test_no_percentage_above_100_after_raising():
    rates = {"float32": 250e9, "bfloat16": 0.5e9}
    lim = probe().raised("page", matmul=rates)
    for name, rate in rates.items():
        assert lim.percent_of_matmul(name, rate, 1.0) <= 100.0


def test_raised_refuses_bad_input():
    with pytest.raises(ValueError, match="no measured limit for 'int8'"):
        probe().raised("x", matmul={"int8": 1e9})
    with pytest.raises(ValueError, match="bandwidth"):
        probe().raised("x", bandwidth=0.0)
    with pytest.raises(TypeError, match="matmul"):
        probe().raised("x", matmul=[("float32", 1e9)])
    with pytest.raises(TypeError, match="source"):
        probe().raised(3, matmul={})
