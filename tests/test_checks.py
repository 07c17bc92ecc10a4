"""Tests of tricks_helpers._checks: the package's one validation helper and exception policy."""

import numpy as np
import pytest

from tricks_helpers import _checks as c


def test_check_int_accepts_integral_types_and_returns_int():
    assert c.check_int("f", "n", 3) == 3
    v = c.check_int("f", "n", np.int64(4), minimum=0)
    assert v == 4 and type(v) is int


@pytest.mark.parametrize(
    "value, kwargs, error, match",
    [
        (True, {}, TypeError, "f: n must be an integer, got bool True"),
        (2.0, {}, TypeError, "must be an integer, got float"),
        ("3", {}, TypeError, "got str"),
        (0, dict(minimum=1), ValueError, "f: n must be an integer >= 1, got 0"),
        (5, dict(maximum=4), ValueError, "<= 4"),
        (5, dict(minimum=0, maximum=4), ValueError, r"in \[0, 4\]"),
    ],
)
def test_check_int_errors(value, kwargs, error, match):
    with pytest.raises(error, match=match):
        c.check_int("f", "n", value, **kwargs)


@pytest.mark.parametrize(
    "value, kwargs, error",
    [
        (float("nan"), {}, ValueError),
        (float("inf"), {}, ValueError),
        (True, {}, TypeError),
        ("1", {}, TypeError),
        (0.0, dict(minimum=0.0, strict_minimum=True), ValueError),
        (-1.0, dict(minimum=0.0), ValueError),
        (2.0, dict(maximum=1.0), ValueError),
    ],
)
def test_check_number_errors(value, kwargs, error):
    with pytest.raises(error):
        c.check_number("f", "x", value, **kwargs)


def test_check_number_accepts():
    assert c.check_number("f", "x", 1) == 1.0
    assert c.check_number("f", "x", float("inf"), allow_inf=True) == float("inf")
    assert c.check_number("f", "x", np.float32(0.5), minimum=0.0) == 0.5


def test_other_checks():
    assert c.check_callable("f", "fn", len) is len
    with pytest.raises(TypeError, match="f: fn must be callable, got int"):
        c.check_callable("f", "fn", 3)
    assert c.check_type("f", "x", 3, (int, float)) == 3
    with pytest.raises(TypeError, match="x must be int or float, got str"):
        c.check_type("f", "x", "3", (int, float))
    assert c.check_bool("f", "b", False) is False
    with pytest.raises(TypeError, match="b must be True or False, got str 'no'"):
        c.check_bool("f", "b", "no")
    assert c.check_choice("f", "mode", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'; got 'c'"):
        c.check_choice("f", "mode", "c", ("a", "b"))
    with pytest.raises(ValueError, match="must be one of"):
        c.check_choice("f", "mode", ["unhashable"], {"a"})
