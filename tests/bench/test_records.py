"""Tests of tricks_helpers.bench.records: records of shown comparisons, written only on request."""

from __future__ import annotations

import json

import pytest

from tricks_helpers import bench
from tricks_helpers.bench import records


def comparison(why: str = "2x fewer bytes", show: bool = False):
    return bench.comparison_from_times(
        "copy less", [2e-3] * 6, [1e-3] * 6, threads=2, show=show, why=why
    )


def test_record_holds_what_was_measured():
    rec = comparison().record(chapter="03_x")
    assert rec["label"] == "copy less" and rec["chapter"] == "03_x"
    assert rec["verdict"] == "FASTER" and rec["why"] == "2x fewer bytes"
    assert (rec["ratio"], rec["lo"], rec["hi"], rec["rounds"]) == (2.0, 2.0, 2.0, 6)
    assert rec["baseline_s"] == 2e-3 and rec["trick_s"] == 1e-3 and rec["threads"] == 2
    assert rec["coverage"] == pytest.approx(1 - 2**-5)
    assert rec["schema"] == records.SCHEMA_VERSION and set(rec) == set(records.FIELDS)


def test_no_env_var_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(records.RECORDS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    comparison(show=True)
    assert "FASTER 2.00x" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    assert records.emit(comparison().record(), environ={}) is None


def test_shown_comparisons_append_one_line_each_and_print_the_same(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(records.RECORDS_ENV, raising=False)
    comparison(show=True)
    silent = capsys.readouterr().out
    target = tmp_path / "r.jsonl"
    monkeypatch.setenv(records.RECORDS_ENV, str(target))
    monkeypatch.setenv(records.CHAPTER_ENV, "05_memory")
    comparison(show=True)
    assert capsys.readouterr().out == silent  # emission changes no printed output
    comparison(show=False)  # not shown: not recorded
    many = bench.ManyComparison("m", {"a": (2.0,) * 6, "b": (1.0,) * 6}, "cpu", 2)
    many.compare("a vs b", ("a", "b"), why="fewer ops")
    table_text = bench.table({"row name": comparison()})
    assert "row name" in table_text
    recs = records.read_records(target)
    assert [(r["label"], r["chapter"], r["why"]) for r in recs] == [
        ("copy less", "05_memory", "2x fewer bytes"),
        ("a vs b", "05_memory", "fewer ops"),
        ("row name", "05_memory", "2x fewer bytes"),
    ]


def test_chapter_falls_back_to_the_file_stem(tmp_path):
    path = records.emit(
        comparison().record(), environ={records.RECORDS_ENV: str(tmp_path / "c.jsonl")}
    )
    assert records.read_records(path)[0]["chapter"] == "c"


def test_why_must_be_one_line_string():
    with pytest.raises(TypeError, match="why"):
        comparison(why=3)
    with pytest.raises(ValueError, match="one line"):
        comparison(why="a\nb")


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"schema": 99}, ValueError, "schema 99"),
        ({"ratio": -1.0}, ValueError, "ratio must be finite"),
        ({"lo": 3.0}, ValueError, "lo > hi"),
        ({"coverage": 1.0}, ValueError, "coverage"),
        ({"verdict": "FAST"}, ValueError, "unknown verdict"),
        ({"threads": "2"}, TypeError, "threads"),
        ({"checked": 1}, TypeError, "checked"),
        ({"label": " "}, ValueError, "label"),
        ({"extra": 1}, ValueError, "unknown fields"),
    ],
)
def test_validate_refuses_bad_records(change, error, match):
    rec = {**comparison().record(), **change}
    with pytest.raises(error, match=match):
        records.validate_record(rec)


def test_validate_and_make_refuse_non_records():
    with pytest.raises(TypeError, match="mapping"):
        records.validate_record([1])
    rec = comparison().record()
    del rec["why"]
    with pytest.raises(ValueError, match=r"missing fields \['why'\]"):
        records.validate_record(rec)
    with pytest.raises(TypeError, match="expected a Comparison"):
        records.make_record(object())


def test_read_records_names_the_bad_line(tmp_path):
    path = tmp_path / "r.jsonl"
    good = json.dumps(comparison().record())
    path.write_text(good + "\n\nnot json\n")
    with pytest.raises(ValueError, match="line 3"):
        records.read_records(path)
    with pytest.raises(FileNotFoundError):
        records.read_records(tmp_path / "absent.jsonl")


def test_a_tables_why_goes_into_its_rows_records_and_is_not_printed(tmp_path, monkeypatch):
    monkeypatch.delenv(records.RECORDS_ENV, raising=False)
    plain = bench.table({"a": comparison(why=""), "b": comparison(why="")})
    target = tmp_path / "r.jsonl"
    monkeypatch.setenv(records.RECORDS_ENV, str(target))
    text = bench.table({"a": comparison(why=""), "b": comparison(why="")}, why={"a": "same sum"})
    assert text == plain
    assert [(r["label"], r["why"]) for r in records.read_records(target)] == [
        ("a", "same sum"),
        ("b", ""),
    ]
    with pytest.raises(ValueError, match=r"table: why names no row: \['c'\]"):
        bench.table({"a": comparison()}, why={"c": "x"})
    with pytest.raises(TypeError, match="why"):
        bench.table({"a": comparison()}, why={"a": 3})
