"""Issue 42: one definition of a record from its maker to its reader, every reader strict.

Each test is one case of the issue: it failed on the code before (9cc370c) and passes now.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time

import pytest

from scripts.book import chapter_run, machine_records, run_notebooks
from scripts.compat import outcome as compat_outcome
from scripts.compat import schema as compat_schema
from scripts.results import check as results_check
from scripts.results import json_file
from scripts.results import machines as results_machines
from scripts.results import schema as results_schema
from tricks_helpers import bench, claims, fields
from tricks_helpers.limits import Limits

OK = {"status": "ok", "error": "", "seconds": 1.0}
LIMITS = Limits(
    2, 2**25, "sysfs L3", 2**27, 9e9, {"float32": 5e10}, {"float32": 512}, {"int8": "x"}
)


def comparison(label="fusion", times=(2e-3, 1e-3)):
    b, t = times
    return bench.comparison_from_times(label, [b] * 6, [t] * 6, threads=1, show=False)


def facts():
    return machine_records.machine_facts(
        cpu="Test CPU", flags=frozenset({"avx2"}), environ={}, threads=2, gpu="none", arch="x86_64"
    )


def results(source="survey", n=1):
    records = [comparison(f"row {i}").record(chapter="01_x") for i in range(n)]
    return machine_records.merge_results(None, facts(), {"01_x": dict(OK)}, records, source)


def write(folder, data, text=None):
    path = folder / results_schema.file_name(data["machine"]["id"], data["source"])
    path.write_text(json.dumps(data) if text is None else text, encoding="utf-8")
    return path


# ------------------------------------------------------------ one definition, maker to reader


def test_the_schema_takes_its_text_limits_from_the_package_definition():
    props = results_schema.RESULTS_SCHEMA["properties"]
    record = props["records"]["items"]["properties"]
    claim = props["claims"]["items"]["properties"]
    for name, spec in fields.RECORD.items():
        assert record[name]["maxLength"] == spec.max_length
    for name, spec in fields.CLAIM.items():
        assert claim[name]["maxLength"] == spec.max_length
    assert claim["status"]["enum"] == list(claims.STATUSES)
    assert list(record) == list(bench.records.FIELDS)


@pytest.mark.parametrize("text", ["a\u200bb", "a\u202eb", "a\u2066b", "a\ufeffb", "a\tb"])
def test_invisible_and_reordering_characters_are_refused_by_the_schema(text):
    data = results()
    data["records"][0]["label"] = text
    with pytest.raises(ValueError, match="label"):
        results_schema.check_results(data, "f.json")
    data = results()
    data["machine"]["cpu"] = text
    with pytest.raises(ValueError, match="machine.cpu"):
        results_schema.check_results(data, "f.json")


def test_what_the_package_makes_the_schema_takes_and_the_reverse():
    longest = comparison("x" * 300).record(chapter="01_x")
    data = results()
    data["records"] = [longest]
    results_schema.check_results(data)  # a 300-character label: made, and taken
    with pytest.raises(ValueError, match="label is 301 characters"):
        comparison("x" * 301)


# ------------------------------------------------------------ one strict reader


@pytest.mark.parametrize(
    "text, said",
    [
        ('{"a": 1, "a": 2}', "key 'a' appears twice"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": ' + "9" * 5000 + "}", "a number of 5000 characters"),
        ("[" * 50 + "]" * 50, "nested too deeply"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_read_json_refuses_and_names_the_file(tmp_path, text, said):
    path = tmp_path / "x-survey.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"x-survey.json: {said}"):
        json_file.read_json(path)


def test_read_json_names_the_file_on_bad_bytes_and_refuses_a_folder(tmp_path):
    (tmp_path / "bad.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError, match="bad.json: not UTF-8"):
        json_file.read_json(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="^d.json: is a directory"):
        (tmp_path / "d.json").mkdir()
        json_file.read_json(tmp_path / "d.json")


def test_a_repeated_key_in_a_contributed_file_is_refused(tmp_path):
    data = results()
    text = json.dumps(data)
    text = text.replace('"source": "survey"', '"source": "survey", "source": "book"', 1)
    path = write(tmp_path, data, text)
    with pytest.raises(ValueError, match="key 'source' appears twice"):
        results_check.check_file(path, contributed=True)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "x-survey.json"
    os.mkfifo(path)
    code = (
        "import sys\nfrom scripts.results import json_file\n"
        "try:\n    json_file.read_json(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.stdout == "x-survey.json: is a FIFO, not a regular file; nothing was read\n"


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "x-survey.json"
    with open(path, "wb") as f:
        f.truncate(20 * 2**20)  # 20 MB, sparse
    with pytest.raises(ValueError, match="^x-survey.json: holds 20,971,520"):
        json_file.read_json(path)


def _plant(tmp_path, kind):
    path = tmp_path / "torch-2.13.0.json"  # a compat record's name; any reader reads it
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "over the bound":
        with open(path, "wb") as f:
            f.truncate(5 * 2**20)
    elif kind == "bad bytes":
        path.write_bytes(b'{"a": "\xff"}')
    elif kind == "not JSON":
        path.write_text("{")
    elif kind == "repeated key":
        path.write_text('{"a": 1, "a": 2}')
    elif kind == "not a results file":
        path.write_text('{"a": 1}')
    return path  # "missing": nothing planted


@pytest.mark.parametrize(
    "kind",
    [
        "fifo",
        "folder",
        "over the bound",
        "bad bytes",
        "not JSON",
        "repeated key",
        "not a results file",
        "missing",
    ],
)
def test_every_reader_names_the_file_once(tmp_path, kind, capsys):
    """Issue 42: an error names the file once (it said ``a.json: 'a.json' is a FIFO``)."""
    from scripts.compat import records as compat_records

    path = _plant(tmp_path, kind)
    readers = [machine_records.read_results, results_check.check_file, compat_records.read_record]
    if kind != "not a results file":
        readers.append(json_file.read_json)
    for read in readers:
        with pytest.raises((TypeError, ValueError, FileNotFoundError)) as caught:
            read(path)
        said = str(caught.value)
        assert said.count(path.name) == 1, (read.__name__, said)
    assert results_check.main([str(path)]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.count(path.name) == 1, line


# ------------------------------------------------------------ the page reads as the check does


def test_the_page_refuses_a_link_out_of_the_checkout_and_a_huge_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = write(outside, results())
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / target.name).symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        results_machines.machine_files(tmp_path)
    (tmp_path / "results" / target.name).unlink()
    with open(tmp_path / "results" / target.name, "wb") as f:
        f.truncate(20 * 2**20)
    with pytest.raises(ValueError, match="holds 20,971,520 bytes"):
        results_machines.machine_files(tmp_path)


def test_a_ratio_its_times_disagree_with_is_refused():
    data = results()
    rec = data["records"][0]
    rec.update(ratio=1e300, lo=1e300, hi=1e300, baseline_s=0.91e-3, trick_s=1e-3)
    with pytest.raises(ValueError):
        results_schema.check_results(data, "f.json")
    data = results()
    rec = data["records"][0]
    rec.update(ratio=12.0, lo=11.0, hi=13.0, baseline_s=0.91e-3, trick_s=1e-3)  # times 0.91x
    with pytest.raises(ValueError, match="ratio 12 but its times say 0.91"):
        results_schema.check_results(data, "f.json")
    # a loaded machine's medians part further than a quiet one's (05: 0.115x against 0.042x)
    data = results()
    data["records"][0].update(ratio=0.1153, lo=0.1, hi=0.13, baseline_s=0.0422e-3, trick_s=1e-3)
    data["records"][0].update(verdict="SLOWER")
    results_schema.check_results(data, "f.json")


def test_a_ten_thousand_record_survey_is_refused_quickly(tmp_path):
    data = results()
    data["records"] = [copy.deepcopy(data["records"][0]) for _ in range(10_000)]
    path = write(tmp_path, data)
    start = time.monotonic()
    with pytest.raises(ValueError, match="records"):
        results_check.check_file(path, contributed=True)
    assert time.monotonic() - start < 30


def test_write_json_never_shares_a_temporary(tmp_path):
    (tmp_path / "a.json.tmp").mkdir()  # the old fixed temporary name, taken
    json_file.write_json(tmp_path / "a.json", {"x": 1})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": 1}


# ------------------------------------------------------------ compat entries


def test_a_compat_error_with_a_tab_is_made_one_line():
    entry = compat_outcome.entry(None, 1.0, "RuntimeError:\tbad\u202e thing", "2026-01-01", "abc")
    assert entry["error"] == "RuntimeError: bad thing"
    record = {
        "schema": 1,
        "torch_release": "2.13.0",
        "torch": "2.13.0+cpu",
        "torchao": "0.16.0",
        "torchao_requirement": "torchao",
        "python": "3.11.7",
        "machine": "m-2t",
        "chapters": {"01_x": entry},
    }
    compat_schema.check_compat(record)


# ------------------------------------------------------------ the runner: fail a chapter only


def test_a_chapter_whose_claims_the_file_refuses_fails_alone_and_the_rest_are_written(tmp_path):
    def run(path, write, timeout):
        c = comparison("x")
        claim = {
            "chapter": path.stem,
            "key": "k",
            "advice": "a",
            "condition": "any CPU",
            "status": "MAYBE" if path.stem == "02_b" else "HELD",
            "evidence": "e",
            "measured": False,
        }
        return chapter_run.Outcome(path.name, 0.1, "", [c.record(chapter=path.stem)], [claim])

    paths = [tmp_path / "book" / f"{n}.ipynb" for n in ("01_a", "02_b", "03_c")]
    outcomes, (path,) = run_notebooks.run(paths, "survey", runner=run, measure=lambda: LIMITS)
    assert [o.ok for o in outcomes] == [True, False, True]
    assert "records refused" in outcomes[1].error
    data = machine_records.read_results(path)
    assert sorted(data["chapters"]) == ["01_a", "02_b", "03_c"]
    assert {r["chapter"] for r in data["records"]} == {"01_a", "03_c"}


def test_a_claim_line_with_a_tab_fails_its_chapter_as_it_is_read(tmp_path, make_claim):
    path = tmp_path / "c.claims.jsonl"
    path.write_text(json.dumps(make_claim(chapter="01_a", evidence="a\tb")) + "\n")
    claims_read, problem = chapter_run.read_chapter_claims(path, "01_a")
    assert claims_read == [] and "evidence must be one line" in problem


def _never(path, write, timeout):
    pytest.fail(f"{path.name} ran")


def test_results_naming_a_file_is_refused_before_any_chapter_runs(tmp_book, capsys):
    root = tmp_book({"01_a": ["x = 1"]})
    a_file = root / "results.txt"
    a_file.write_text("x")
    notebook = root / "book" / "01_a.ipynb"
    with pytest.raises(ValueError, match="is not a folder"):
        run_notebooks.run(
            [notebook], "survey", results=a_file, runner=_never, measure=lambda: LIMITS
        )
    argv = [str(notebook), "--survey", "--results", str(a_file)]
    assert run_notebooks.main(argv, root=root) == 1  # main's runner would run: it never does
    err = capsys.readouterr()
    assert "is not a folder" in err.err and "executing" not in err.out


def test_a_previous_results_file_that_is_not_json_is_refused_before_any_chapter_runs(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    target = machine_records.results_path(folder, machine_records.machine_facts()["id"], "survey")
    target.write_text("{not json")
    with pytest.raises(ValueError, match=f"{target.name}: not JSON"):
        run_notebooks.run(
            [tmp_path / "book" / "01_a.ipynb"],
            "survey",
            results=folder,
            runner=_never,
            measure=lambda: LIMITS,
        )


def test_two_notebooks_with_one_stem_never_share_an_entry(tmp_path):
    paths = [tmp_path / "book" / "01_a.ipynb", tmp_path / "extra" / "01_a.ipynb"]
    with pytest.raises(ValueError, match="share the chapter name '01_a'"):
        run_notebooks.run(
            paths, "survey", results=tmp_path / "r", runner=_never, measure=lambda: LIMITS
        )
