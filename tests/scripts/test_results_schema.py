"""Tests of scripts/results/schema.py: a contributed results file is data, never markup (issue 32).

Each case of the issue's probe is planted: wrong types and ranges, NaN, a path for a machine id
or a chapter, a verdict, ratio or coverage that contradicts its own interval or rounds, a
second ``book`` file, and strings carrying HTML, MyST directives and roles. The page built from
the files that pass holds them only as text (parsed with MyST's own Markdown parser).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from scripts.book import machine_records
from scripts.results import check as results_check
from scripts.results import json_file, retired_verdict
from scripts.results import machines as results_machines
from scripts.results import page as results_page
from scripts.results import schema as results_schema
from tricks_helpers import bench

OK = {"status": "ok", "error": "", "seconds": 1.0}


def comparison(label="fusion", times=(2e-3, 1e-3), why=""):
    b, t = times
    return bench.comparison_from_times(label, [b] * 6, [t] * 6, threads=1, show=False, why=why)


def results(source="book", threads=2, cpu="Test CPU", gpu="none", label="fusion", why="", **kw):
    facts = machine_records.machine_facts(
        cpu=cpu, flags=frozenset({"avx2"}), environ={}, threads=threads, gpu=gpu, arch="x86_64"
    )
    records = [comparison(label, why=why, **kw).record(chapter="01_x")]
    return machine_records.merge_results(None, facts, {"01_x": dict(OK)}, records, source)


def _set(path, value):
    def change(data):
        *parents, last = path
        target = data
        for key in parents:
            target = target[key]
        target[last] = value

    return change


def _record(**fields):
    return lambda data: data["records"][0].update(fields)


def _chapter_named(name):
    def change(data):
        data["chapters"][name] = dict(OK)
        data["records"][0]["chapter"] = name

    return change


# the cases of issue 32's probe, each with the error it must raise
BAD = [
    ("threads 'two'", _set(("machine", "threads"), "two"), TypeError, r"machine\.threads"),
    ("threads NaN", _set(("machine", "threads"), math.nan), TypeError, r"machine\.threads"),
    ("threads -4", _set(("machine", "threads"), -4), ValueError, r"machine\.threads"),
    ("threads 2.0", _set(("machine", "threads"), 2.0), TypeError, r"machine\.threads"),
    ("id 42", _set(("machine", "id"), 42), TypeError, r"machine\.id"),
    ("id a path", _set(("machine", "id"), "../escaped"), ValueError, r"machine\.id"),
    ("cpu None", _set(("machine", "cpu"), None), TypeError, r"machine\.cpu"),
    ("isa a string", _set(("machine", "isa"), "avx2"), TypeError, r"machine\.isa"),
    ("capped a list", _set(("machine", "capped"), ["x"]), TypeError, r"machine\.capped"),
    (
        "cpu with a directive",
        _set(("machine", "cpu"), "x\n```{literalinclude} /etc/passwd\n```"),
        ValueError,
        "one line",
    ),
    ("id with a newline", _set(("machine", "id"), "m-2t\n"), ValueError, "one line"),
    ("gpu over 200 characters", _set(("machine", "gpu"), "g" * 201), ValueError, "long"),
    ("unknown machine key", _set(("machine", "x"), 1), ValueError, "Additional properties"),
    ("chapter a/b", _chapter_named("a/b"), ValueError, r"chapters? 'a/b' has characters"),
    ("chapter ..", _chapter_named(".."), ValueError, "has characters outside"),
    (
        "error with a newline",
        _set(("chapters", "01_x"), {"status": "failed", "error": "a\nb", "seconds": 1.0}),
        ValueError,
        "one line",
    ),
    (
        "failed without an error",
        _set(("chapters", "01_x"), {"status": "failed", "error": "", "seconds": 1.0}),
        ValueError,
        "chapters.01_x.error",
    ),
    (
        "FASTER for [0.5, 0.6]",
        _record(ratio=0.55, lo=0.5, hi=0.6, verdict="FASTER"),
        ValueError,
        "verdict FASTER but the interval .* gives SLOWER",
    ),
    ("ratio outside its interval", _record(ratio=9.0), ValueError, "outside its interval"),
    (
        "coverage 0.5 at 15 rounds",
        _record(coverage=0.5, rounds=15),
        ValueError,
        "coverage 0.5 but 15 rounds give 0.96",
    ),
    # the schema says it: NaN is no JSON number, so a wrong type (one definition, issue 42)
    ("ratio NaN", _record(ratio=math.nan), TypeError, r"records\[0\]\.ratio"),
    ("label with a newline", _record(label="a\nb"), ValueError, "label"),
    ("why a number", _record(why=3), TypeError, "why"),
    ("device a tag", _record(device="<b>cpu</b>"), ValueError, "device"),
]


@pytest.mark.parametrize(("case", "change", "error", "match"), BAD, ids=[c[0] for c in BAD])
def test_the_schema_refuses_each_probed_case(case, change, error, match):
    data = results()
    machine_records.validate_results(data)  # the good file passes
    bad = copy.deepcopy(data)
    change(bad)
    with pytest.raises(error, match=match):
        machine_records.validate_results(bad, "f.json")


def test_the_schema_is_a_valid_json_schema_and_the_stored_files_pass(repo_root):
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(results_schema.RESULTS_SCHEMA)
    paths = sorted((repo_root / "results").glob("*.json"))
    assert paths, "the repository holds its reference results file"
    for path in paths:
        results_schema.check_results(json.loads(path.read_text()), path.name)


def test_nan_in_a_file_is_not_json(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(results()).replace('"threads": 2', '"threads": NaN', 1))
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        machine_records.read_results(path)


def test_write_json_replaces_whole_and_reads_back(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    assert json_file.write_json(path, {"b": 1, "a": [0.5]}) == path
    assert path.read_text(encoding="utf-8") == '{\n "a": [\n  0.5\n ],\n "b": 1\n}\n'
    assert json_file.read_json(path) == {"a": [0.5], "b": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind


@pytest.mark.parametrize("machine_id", ["../escaped", "ABSOLUTE", "a/b", "..", "A-B", ""])
def test_write_results_never_writes_outside_its_folder(tmp_path, machine_id):
    folder = tmp_path / "results"
    if machine_id == "ABSOLUTE":  # an absolute path (inside tmp_path, should a write escape)
        machine_id = str(tmp_path / "abs")
    data = results()
    data["machine"]["id"] = machine_id
    with pytest.raises(ValueError, match="machine.id|machine id"):
        machine_records.write_results(data, folder)
    with pytest.raises(ValueError, match="lower-case words"):
        machine_records.results_path(folder, machine_id, "book")
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


def test_numbering_many_records_of_one_label_is_linear():
    rec = results()["records"][0]
    records = [rec] * 20_000
    start = time.perf_counter()
    keys = machine_records.record_keys(records)
    took = time.perf_counter() - start
    assert len(keys) == 20_000 and ("01_x", "fusion", 19_999) in keys
    assert took < 2.0, f"record_keys took {took:.1f} s for 20,000 records of one label"


def test_one_book_file_each_named_after_its_machine(tmp_path):
    book, other = results(), results(threads=4)
    folder = tmp_path / "results"
    machine_records.write_results(book, folder)
    assert len(results_machines.machine_files(tmp_path)) == 1
    # a second "book" file whose name sorts first would replace the book's own table
    (folder / "000-first.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="must be named test-avx2-only-4t.json"):
        results_machines.machine_files(tmp_path)
    (folder / "000-first.json").unlink()
    machine_records.write_results(other, folder)
    with pytest.raises(ValueError, match="several results files with source 'book'"):
        results_machines.machine_files(tmp_path)
    # a survey of the book's machine is a column of its own: named apart, (book) marks the other
    (folder / "test-avx2-only-4t.json").unlink()
    machine_records.write_results(results("survey"), folder)
    names = results_machines.column_names(results_machines.machine_files(tmp_path))
    assert names == ["AVX2 only, 2 cores (book)", "AVX2 only, 2 cores"]


def test_a_bad_file_stops_the_page_before_anything_is_written(tmp_book, capsys):
    root = tmp_book({"01_x": ["# 01 · X", {"source": "x", "outputs": ["x\n"]}]})
    data = results()
    data["machine"]["cpu"] = "x\n```{literalinclude} /etc/passwd\n```"
    (root / "results").mkdir()
    (root / "results" / f"{data['machine']['id']}.json").write_text(json.dumps(data))
    assert results_page.main([], root=root) == 1
    assert "must be one line" in capsys.readouterr().err
    assert not (root / "book" / "results.md").exists()


# strings a contributed file may carry (one line each): every kind of markup
PLANTED = [
    '<script>alert("x1")</script>',
    "x2 ```{literalinclude} /etc/passwd``` {doc}`intro` $x^2$ **bold** [a](javascript:x)",
    "x3 | a pipe \\| an escaped one & &lt; <img src=x onerror=alert(1)> _em_ a__b",
]


def _md_tokens(page):
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence", "deflist"})
    return create_md_parser(config, RendererHTML).parse(page)


def _assert_only_text(page, planted):
    """Every planted string is on the page as text: parsed, it is plain text tokens only."""
    tokens = _md_tokens(page)
    kinds = {t.type for t in tokens}
    assert not kinds & {"html_block", "html_inline", "math_block", "code_block"}, kinds
    fences = {t.info for t in tokens if t.type == "fence"}  # the page's own blocks only
    assert fences <= {
        "{note}",
        "{figure} results_speedups.svg",
        "{figure} results_machines_01_x.svg",
    }
    texts = []
    for t in tokens:
        if t.type != "inline":
            continue
        if any(marker in t.content for marker in ("x1", "x2", "x3")):
            assert {c.type for c in t.children} <= {"text"}, [c.type for c in t.children]
            texts.append("".join(c.content for c in t.children))
    shown = "\n".join(texts)
    for text in planted:
        assert text in shown, f"{text!r} is not shown as text"
    assert "<script" not in page and "<img" not in page


def test_the_page_holds_every_planted_string_as_text_only(tmp_book):
    root = tmp_book({"01_x": ["# 01 · X", {"source": "x", "outputs": ["x\n"]}]})
    folder = root / "results"
    book = results(cpu=PLANTED[0], label=PLANTED[1], why=PLANTED[2])
    mine = results(
        "survey", threads=4, cpu=PLANTED[2], gpu=PLANTED[1], label=PLANTED[1], times=(1e-3, 1e-3)
    )
    mine["chapters"]["02_y"] = {"status": "failed", "error": PLANTED[0], "seconds": 1.0}
    mine["limits"] = {
        "threads": 4,
        "cache_bytes": 2**25,
        "bandwidth": 1e10,
        "matmul": {"float32": 1e11},
        "skipped": {"int8": PLANTED[2]},
    }
    for data in (book, mine):
        machine_records.write_results(data, folder)
    assert results_page.main([], root=root) == 0
    page = (root / "book" / "results.md").read_text()
    assert "Which tricks pay off where" in page and "Comparisons by machine" in page
    _assert_only_text(page, PLANTED)
    charts = sorted((root / "book").glob("*.svg"))
    assert len(charts) == 2  # the page's chart and the chapter's across-machines chart
    for chart in charts:  # labels drawn as text: escaped in the SVG too
        assert "<script" not in chart.read_text() and "<img" not in chart.read_text()


def test_text_the_schema_would_refuse_is_still_only_text_on_the_page():
    """Defence in depth: newlines (a directive on a line of its own) rendered past the schema."""
    directive = "x2\n```{literalinclude} /etc/passwd\n```\n"
    book, mine = results(), results("survey", threads=4, times=(1e-3, 1e-3))
    book["machine"]["cpu"] = directive
    mine["chapters"]["02_y"] = {"status": "failed", "error": "x1\n<script>x</script>"}
    book["records"][0]["label"] = mine["records"][0]["label"] = "x3\n\n# a heading"
    from scripts.results import overview

    files = [book, mine]
    page = "\n".join(
        overview.machine_details(files)
        + overview.render_comparisons(files, Path("."), {"01_x": "01 · X"})
        + overview.render_overview(files, Path("."), {})
    )
    planted = [
        "x2 ```{literalinclude} /etc/passwd ``` ",
        "x1 <script>x</script>",
        "x3  # a heading",
    ]
    _assert_only_text(page, planted)


def test_cell_text_escapes_markup_and_keeps_plain_words():
    text = results_machines.cell_text
    assert text("channels_last, 01_x: ~1.5 GB/s (a, b) -> c") == (
        "channels_last, 01_x: ~1.5 GB/s (a, b) -&gt; c"
    )
    assert text("a | b") == "a \\| b"
    assert text("<script>") == "&lt;script&gt;"
    assert text("x\n```{y}") == "x \\`\\`\\`\\{y\\}"
    assert text("_a_ *b* $c$ [d]") == "\\_a\\_ \\*b\\* \\$c\\$ \\[d\\]"


# The check command a contributor runs on a survey before attaching it (CONTRIBUTING.md).
def write(folder, data, name=None):
    name = name or results_schema.file_name(data["machine"]["id"], data["source"])
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_check_command_passes_a_survey_and_says_what_it_holds(tmp_path, capsys):
    path = write(tmp_path, results("survey"))
    assert results_check.main(["--contributed", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"results.check: {path}: ok, survey of test-avx2-only-2t: 1 chapters (0 failed), "
        "1 records, 0 claims\n"
    )


def test_the_stored_results_pass_the_check_command(repo_root, capsys):
    files = sorted((repo_root / "results").glob("*.json"))
    assert files and results_check.main([str(p) for p in files]) == 0
    assert capsys.readouterr().out.count(": ok, ") == len(files)


@pytest.mark.parametrize(
    "plant, match",
    [
        (lambda d, p: p.write_text("{", encoding="utf-8"), "not JSON"),
        (lambda d, p: p.write_text(json.dumps(d).replace("1.0", "NaN", 1)), "NaN is not a JSON"),
        (lambda d, p: p.write_bytes(b'{"schema": "\xff"}'), "not UTF-8"),
        (lambda d, p: p.write_text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
        (lambda d, p: p.write_text(json.dumps({**d, "source": "book"})), "must be named"),
        (lambda d, p: p.write_text(json.dumps({**d, "extra": 1})), "Additional properties"),
        (lambda d, p: os.truncate(p, json_file.MAX_FILE_BYTES + 1), "more than 4,194,304"),
    ],
)
def test_check_command_names_the_file_and_the_first_failed_check(tmp_path, capsys, plant, match):
    data = results("survey")
    path = write(tmp_path, data)
    plant(data, path)
    assert results_check.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"results.check: {path}: INVALID: ")
    assert re.search(match, out), out
    with pytest.raises((TypeError, ValueError), match=match):
        results_check.check_file(path)


def test_check_command_refuses_links_folders_a_book_file_and_two_books(tmp_path, capsys):
    survey = write(tmp_path, results("survey"))
    link = tmp_path / "link-survey.json"
    link.symlink_to(survey)
    with pytest.raises(ValueError, match="not a regular file"):
        results_check.check_file(link)
    with pytest.raises(ValueError, match="not a regular file"):
        results_check.check_file(tmp_path)
    with pytest.raises(ValueError, match="^absent.json: no such file"):
        results_check.check_file(tmp_path / "absent.json")
    one = write(tmp_path, results("book", threads=2))
    two = write(tmp_path, results("book", threads=4))
    with pytest.raises(ValueError, match="source 'book'; a contributed file is a survey"):
        results_check.check_file(one, contributed=True)
    assert results_check.main([str(one), str(two)]) == 1
    assert "together: INVALID: several results files with source 'book'" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        results_check.main([])  # no file: a usage error


def test_a_file_of_the_three_verdict_book_is_read_with_four(tmp_path):
    data = results(times=(1e-3, 1e-3))
    assert data["records"][0]["verdict"] == "SAME"
    data["records"][0]["verdict"] = retired_verdict.RETIRED_VERDICT
    with pytest.raises(ValueError, match="verdict"):  # the checks know four words only
        results_schema.check_results(copy.deepcopy(data), "old")
    path = tmp_path / "test-avx2-only-2t.json"
    path.write_text(json.dumps(data))
    assert machine_records.read_results(path)["records"][0]["verdict"] == "SAME"
    assert retired_verdict.redecide("NO CLEAR DIFFERENCE", 0.83, 0.97) == "UNDECIDED"
    assert retired_verdict.redecide("NO CLEAR DIFFERENCE", 1.10, 1.2) == "UNDECIDED"  # rounded
    assert retired_verdict.redecide("FASTER", 1.2, 1.3) == "FASTER"
    with pytest.raises(ValueError, match="is no verdict"):
        retired_verdict.redecide("QUICKER", 1.2, 1.3)
    for path in sorted((Path(__file__).parents[2] / "results").glob("*.json")):
        stored = json.loads(path.read_text())["records"]  # the stored files were upgraded
        assert retired_verdict.RETIRED_VERDICT not in {r["verdict"] for r in stored}, path.name
