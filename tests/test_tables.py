"""Tests of tricks_helpers.tables: one aligned table for measured rows."""

from __future__ import annotations

import re

import pytest

from tricks_helpers import bench, tables
from tricks_helpers.tables import Measured


def sanitize(text):
    """The two rules of nbval_sanitize.cfg that mask measured digits."""
    text = re.sub(r"[ ]*~-?[0-9][0-9.,]*(?:e[+-]?[0-9]+)?(?: (?:ns|us|ms|s)\b)?", "~N", text)
    return re.sub(r"±[0-9][0-9.,]*(?:e[+-]?[0-9]+)?%?", "±N", text)


def test_measured_cells_print_tilde_unit_and_spread():
    assert str(Measured(0.00977)) == "~0.00977"
    assert str(Measured(97.6, "%")) == "~97.6%"
    assert str(Measured(-3.0, "images")) == "~-3 images"
    assert str(Measured(12345.0, "images/s", spread=0.031)) == "~1.23e+04 images/s ±3.1%"
    assert str(Measured(2.5e-5, "time")) == "~25 us"
    assert str(Measured(0.123, digits=2)) == "~0.12"


def test_time_and_rate_come_from_a_measurement():
    m = bench.Measurement((0.010, 0.012, 0.011, 0.013, 0.009), "cpu")
    per_item = Measured.time(m, items=100)
    assert per_item.value == pytest.approx(0.011 / 100) and per_item.unit == "time"
    assert per_item.spread == pytest.approx(m.spread / m.median)
    rate = Measured.rate(m, 100, "img/s")
    assert rate.value == pytest.approx(100 / 0.011) and str(rate).endswith("img/s ±9.1%")


def test_table_aligns_and_masks_to_the_same_text_whatever_the_digits():
    def make(a, b):
        return tables.measured_table(
            ("source", "records/s", "bytes", "dtype"),
            {
                "folder": [Measured(a, spread=0.02), 4_019_385, "uint8"],
                "lmdb": [Measured(b), 7, "x"],
            },
        )

    one, two = make(6.49e4, 3.6), make(123.0, -1.23e5)
    assert one != two
    assert sanitize(one) == sanitize(two)
    lines = one.splitlines()
    assert lines[0].startswith("source  ") and lines[0].endswith("bytes  dtype")
    assert len({len(line) for line in lines}) == 1  # right-aligned: every line ends together
    assert "4,019,385" in lines[1]


def test_rows_as_sequences_keep_their_order():
    text = tables.measured_table(("what", "value"), [("b", Measured(1.0)), ("a", "fact")])
    assert [line.split()[0] for line in text.splitlines()] == ["what", "b", "a"]


@pytest.mark.parametrize(
    "header, rows, error, match",
    [
        ("what", {"a": [1]}, TypeError, "header"),
        (("what",), {"a": []}, ValueError, "value column"),
        (("what", 1), {"a": [1]}, TypeError, "column title"),
        (("what", "v"), {}, ValueError, "no rows"),
        (("what", "v"), {"a": [1, 2]}, ValueError, "row 'a' has 2 cells"),
        (("what", "v"), {"a": [1.5]}, TypeError, "cell"),
        (("what", "v"), {"a": ["x\ny"]}, ValueError, "one line"),
        (("what", "v"), [(3, 1)], TypeError, "row label"),
    ],
)
def test_bad_tables_are_rejected(header, rows, error, match):
    with pytest.raises(error, match=match):
        tables.measured_table(header, rows)


@pytest.mark.parametrize(
    "kw, error, match",
    [
        ({"value": "1"}, TypeError, "value"),
        ({"value": float("inf")}, ValueError, "finite"),
        ({"value": 1.0, "unit": 3}, TypeError, "unit"),
        ({"value": 1.0, "unit": "a\nb"}, ValueError, "one line"),
        ({"value": 1.0, "spread": -0.1}, ValueError, "spread"),
        ({"value": 1.0, "digits": 0}, ValueError, "digits"),
    ],
)
def test_bad_measured_values_are_rejected(kw, error, match):
    with pytest.raises(error, match=match):
        Measured(**kw)


def test_time_and_rate_reject_bad_input():
    m = bench.Measurement((0.01,), "cpu")
    with pytest.raises(TypeError, match="measurement"):
        Measured.time(0.01)
    with pytest.raises(ValueError, match="items"):
        Measured.time(m, items=0)
    with pytest.raises(ValueError, match="items"):
        Measured.rate(m, 0)
