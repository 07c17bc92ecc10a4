"""Tests of scripts/book/run_notebooks.py, the one runner: book, try, survey and compare modes."""

from __future__ import annotations

import json

import nbformat
import pytest

from scripts.book import chapter_run, machine_records, run_notebooks
from scripts.book.notebook_run import Execution, execute_notebook
from tricks_helpers import bench, limits
from tricks_helpers.bench import records
from tricks_helpers.limits import Limits

LIMITS = Limits(
    2, 2**25, "sysfs L3", 2**27, 9e9, {"float32": 5e10}, {"float32": 512}, {"int8": "x"}
)

SHOW = (
    "from tricks_helpers import bench\n"
    "bench.comparison_from_times('tiny', [2e-3] * 6, [1e-3] * 6, threads=1, why='half the work')"
)


def record_line(chapter: str, label: str) -> str:
    c = bench.comparison_from_times(label, [2e-3] * 6, [1e-3] * 6, threads=1, show=False)
    return json.dumps(c.record(chapter=chapter), sort_keys=True) + "\n"


def stub(label="x", error=""):
    """A runner that runs nothing: one record of ``label`` per chapter."""

    def run(path, write, timeout):
        c = bench.comparison_from_times(label, [2e-3] * 6, [1e-3] * 6, threads=1, show=False)
        return chapter_run.Outcome(path.name, 0.1, error, [c.record(chapter=path.stem)])

    return run


def test_outcome_lines_and_summary():
    ok = chapter_run.Outcome("01_a.ipynb", 1.25)
    bad = chapter_run.Outcome("02_bb.ipynb", 3.0, "code cell 4: ValueError: x")
    text = run_notebooks.summary([ok, bad])
    lines = text.splitlines()
    assert lines[0].startswith("summary: torch ")
    assert lines[1] == "01_a.ipynb   ok         1.2 s"
    assert lines[2] == "02_bb.ipynb  FAILED     3.0 s  code cell 4: ValueError: x"
    assert lines[3] == "1 of 2 notebooks ran without error; failed: 02_bb.ipynb"
    assert bad.status() == {"status": "failed", "error": "code cell 4: ValueError: x", "seconds": 3}


def test_run_refuses_an_unknown_mode(tmp_path):
    with pytest.raises(ValueError, match="mode must be one of"):
        run_notebooks.run([tmp_path / "01_a.ipynb"], "write", runner=stub())


def fake_execute(path, *, timeout=600, env=None):
    """Stands in for the kernel: 02 is read for real, 03's kernel dies mid-record."""
    if path.stem.startswith("02"):
        return execute_notebook(path, timeout=timeout, env=env)
    with open(env[records.RECORDS_ENV], "a", encoding="utf-8") as f:
        f.write(record_line(path.stem, "whole"))
        if path.stem.startswith("03"):
            f.write(record_line(path.stem, "torn")[:40])  # the kernel died mid-write
            return Execution(None, 0.2, "DeadKernelError: Kernel died")
    return Execution(None, 0.1, "")


def test_a_survey_keeps_finished_chapters_past_an_unreadable_notebook_and_a_torn_record(
    tmp_path, monkeypatch, capsys
):
    """Issue 32: one unreadable notebook or a kernel dying mid-record lost the whole survey."""
    monkeypatch.setattr(chapter_run, "execute_notebook", fake_execute)
    book = tmp_path / "book"
    book.mkdir()
    for name in ("01_ok", "02_unreadable", "03_died", "04_ok"):
        (book / f"{name}.ipynb").write_text("{not json" if name == "02_unreadable" else "{}")
    paths = sorted(book.glob("*.ipynb"))
    outcomes, (path,) = run_notebooks.run(paths, "survey", measure=lambda: LIMITS)
    assert path == tmp_path / "results" / path.name and path.name.endswith("-survey.json")
    data = machine_records.read_results(path)
    status = {k: v["status"] for k, v in data["chapters"].items()}
    assert status == {"01_ok": "ok", "02_unreadable": "failed", "03_died": "failed", "04_ok": "ok"}
    errors = {k: v["error"] for k, v in data["chapters"].items()}
    assert errors["02_unreadable"].startswith("unreadable notebook: NotJSONError")
    assert errors["03_died"] == (
        "DeadKernelError: Kernel died; record line 2 cut off (the kernel stopped writing it)"
    )
    assert [(r["chapter"], r["label"]) for r in data["records"]] == [
        ("01_ok", "whole"),
        ("03_died", "whole"),
        ("04_ok", "whole"),
    ]
    assert "failed: 02_unreadable.ipynb, 03_died.ipynb" in capsys.readouterr().out


def test_a_crashing_runner_fails_its_chapter_only(tmp_path):
    def run(path, write, timeout):
        if path.stem == "02_b":
            raise RuntimeError("boom\nmore")
        return stub()(path, write, timeout)

    paths = [tmp_path / "book" / f"{n}.ipynb" for n in ("01_a", "02_b", "03_c")]
    outcomes, (path,) = run_notebooks.run(paths, "survey", runner=run, measure=lambda: LIMITS)
    assert [o.error for o in outcomes] == ["", "RuntimeError: boom", ""]
    assert sorted(machine_records.read_results(path)["chapters"]) == ["01_a", "02_b", "03_c"]


def test_chapter_records_keep_every_valid_line_and_name_the_rest(tmp_path):
    f = tmp_path / "01_a.jsonl"
    assert chapter_run.read_chapter_records(f, "01_a") == ([], "")
    f.write_text(
        record_line("01_a", "one")
        + "not json\n"
        + record_line("09_z", "other")
        + "\n"
        + record_line("01_a", "two")
    )
    recs, problem = chapter_run.read_chapter_records(f, "01_a")
    assert [r["label"] for r in recs] == ["one", "two"]
    assert problem.startswith("record line 2 dropped: Expecting value")
    assert problem.endswith("record line 3 names chapter '09_z'")


def test_book_mode_keeps_the_old_records_of_a_failed_chapter(tmp_path):
    results = tmp_path / "results"
    paths = [tmp_path / "book" / f"{n}.ipynb" for n in ("01_a", "02_b")]
    _, (path,) = run_notebooks.run(paths, "book", runner=stub("old"), measure=lambda: LIMITS)
    assert path == results / path.name and not path.name.endswith("-survey.json")
    _, written = run_notebooks.run(
        paths, "book", runner=stub("new", error="boom"), keep_going=True, measure=lambda: LIMITS
    )
    assert written == []
    data = machine_records.read_results(path)
    assert data["source"] == "book"
    assert [r["label"] for r in data["records"]] == ["old", "old"], "a failure replaces nothing"
    outcomes, written = run_notebooks.run(paths, "try", runner=stub("new"))
    assert written == [] and len(outcomes) == 2


@pytest.mark.slow
def test_no_write_keep_going_tries_every_notebook_and_writes_nothing(tmp_book, capsys):
    root = tmp_book(
        {
            "01_ok": ["# OK", {"source": "print(1 + 1)", "outputs": []}],
            "02_bad": ["# Bad", {"source": "raise ValueError('nope')", "outputs": []}],
        }
    )
    paths = [str(root / "book" / n) for n in ("02_bad.ipynb", "01_ok.ipynb")]
    before = [open(p, "rb").read() for p in paths]
    assert run_notebooks.main(["--no-write", "--keep-going", *paths]) == 1
    out = capsys.readouterr().out
    assert "02_bad.ipynb  FAILED" in out and "code cell 1: ValueError: nope" in out
    assert "01_ok.ipynb   ok" in out
    assert out.rstrip().endswith("1 of 2 notebooks ran without error; failed: 02_bad.ipynb")
    assert [open(p, "rb").read() for p in paths] == before
    assert not (root / "results").exists()


@pytest.mark.slow
def test_in_place_writes_outputs_and_stops_at_a_failure(tmp_book, capsys):
    root = tmp_book(
        {
            "01_bad": ["# Bad", {"source": "1/0", "outputs": []}],
            "02_ok": ["# OK", {"source": "print('hi')", "outputs": []}],
        }
    )
    bad, ok = root / "book" / "01_bad.ipynb", root / "book" / "02_ok.ipynb"
    assert run_notebooks.main([str(ok)]) == 0
    assert nbformat.read(ok, as_version=4).cells[1].outputs[0]["text"] == "hi\n"
    (results,) = (root / "results").glob("*.json")  # the book's records, with the limits
    data = machine_records.read_results(results)
    assert data["source"] == "book" and data["limits"]["bandwidth"] > 0
    capsys.readouterr()
    before = bad.read_bytes()
    assert run_notebooks.main([str(bad), str(ok)]) == 1
    assert bad.read_bytes() == before, "a failing notebook is left untouched"
    assert "02_ok" not in capsys.readouterr().out, "stopped at the failure"


@pytest.mark.slow
def test_survey_records_comparisons_and_goes_on_after_a_failure(tmp_book, capsys):
    root = tmp_book(
        {
            "01_bad": ["# Bad", {"source": SHOW, "outputs": []}, {"source": "1/0", "outputs": []}],
            "02_ok": ["# OK", {"source": SHOW, "outputs": []}],
        }
    )
    before = (root / "book" / "02_ok.ipynb").read_bytes()
    assert run_notebooks.main(["--survey"], root=root) == 1  # one chapter failed
    out = capsys.readouterr().out
    assert "failed: 01_bad.ipynb" in out
    assert (root / "book" / "02_ok.ipynb").read_bytes() == before, "the book is never written"
    (path,) = (root / "results").glob("*.json")
    data = machine_records.read_results(path)
    assert data["source"] == "survey"
    assert data["chapters"]["01_bad"]["status"] == "failed"
    assert "ZeroDivisionError" in data["chapters"]["01_bad"]["error"]
    assert data["chapters"]["02_ok"]["status"] == "ok"
    assert data["limits"]["bandwidth"] > 0 and "float32" in data["limits"]["matmul"]
    assert [(r["chapter"], r["label"], r["why"]) for r in data["records"]] == [
        ("01_bad", "tiny", "half the work"),
        ("02_ok", "tiny", "half the work"),
    ]


def test_compare_needs_a_reference_and_this_machines_file(tmp_path, capsys):
    assert run_notebooks.main(["--compare", "--results", str(tmp_path)]) == 1
    assert "no results file with source 'book'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_notebooks.main(["--compare", "--survey"])


def test_survey_with_a_stub_runner_writes_and_compare_agrees(tmp_path, capsys):
    nb = [tmp_path / "book" / "01_a.ipynb"]
    _, (mine,) = run_notebooks.run(nb, "survey", runner=stub(), measure=lambda: LIMITS)
    _, (ref,) = run_notebooks.run(
        nb, "book", results=tmp_path / "ref", runner=stub(), measure=lambda: LIMITS
    )
    assert machine_records.read_results(mine)["limits"] == {
        "threads": 2,
        "cache_bytes": 2**25,
        "bandwidth": 9e9,
        "matmul": {"float32": 5e10},
        "skipped": {"int8": "x"},
        "probe": limits.PROBE_VERSION,
        "where": {"float32": "mm 512^3"},
    }
    assert run_notebooks.reference_file(tmp_path / "ref") == ref
    assert run_notebooks.main(["--compare", str(ref), "--results", str(mine.parent)]) == 0
    assert "agree    01_a: x: FASTER" in capsys.readouterr().out


def test_a_survey_on_the_books_machine_never_replaces_the_books_records(tmp_path, capsys):
    """The bug of issue 22: same machine id, the book's file was overwritten by the survey."""
    results = tmp_path / "results"
    nb = [tmp_path / "book" / "01_a.ipynb"]
    _, (book,) = run_notebooks.run(nb, "book", runner=stub("x"), measure=lambda: LIMITS)
    before = book.read_bytes()
    _, (mine,) = run_notebooks.run(nb, "survey", runner=stub("y"), measure=lambda: LIMITS)
    assert mine != book and mine.name.endswith("-survey.json")
    assert mine.name.removesuffix("-survey.json") == book.stem, "one machine, two files"
    assert book.read_bytes() == before, "the book's reference records are untouched"
    assert machine_records.read_results(mine)["source"] == "survey"
    assert run_notebooks.reference_file(results) == book
    # --compare reads this machine's survey (label y), not the book's file (label x)
    assert run_notebooks.main(["--compare", "--results", str(results)]) == 1
    out = capsys.readouterr().out
    assert "missing  01_a: x (not run here)" in out
    assert "0 of 1 reference verdicts agree" in out


def test_a_run_reads_its_results_file_once(tmp_path, monkeypatch):
    """The runner reads the machine's results file once, before the first chapter: the check,
    the limits and the merge after the run share what it read (they read it three times)."""
    import os

    nb = [tmp_path / "book" / "01_a.ipynb", tmp_path / "book" / "02_b.ipynb"]
    _, (path,) = run_notebooks.run(nb, "book", runner=stub("x"), measure=lambda: LIMITS)
    real_open, opened = os.open, []

    def counting_open(file, *args, **kwargs):
        if os.fspath(file) == os.fspath(path):
            opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    _, (again,) = run_notebooks.run(nb, "book", runner=stub("y"), measure=lambda: LIMITS)
    monkeypatch.undo()
    assert again == path and len(opened) == 1
    data = machine_records.read_results(path)
    assert {r["label"] for r in data["records"]} == {"y"} and data["limits"]["probe"]


CLAIMS = (
    "from tricks_helpers import claims\n"
    "book = claims.Claims('t')\n"
    "book.add(claims.from_count('smaller', 'int8 is smaller', True, '0.25x'))\n"
    "_ = book.glue('claims-01')\n"
)


def test_a_chapters_claims_reach_its_results_file_and_replace_its_old_ones(
    tmp_book, capsys, make_claim
):
    root = tmp_book({"01_c": ["# C", {"source": CLAIMS, "outputs": []}]})
    assert run_notebooks.main(["--survey"], root=root) == 0
    (path,) = (root / "results").glob("*.json")
    claims_stored = machine_records.read_results(path)["claims"]
    assert claims_stored == [
        make_claim(
            key="smaller", advice="int8 is smaller", condition="any machine", evidence="0.25x"
        )
    ]
    data = machine_records.read_results(path)
    again = machine_records.merge_results(data, data["machine"], data["chapters"], [], "survey")
    assert "claims" not in again  # a chapter run again without claims drops its old ones


def test_chapter_claims_keep_the_valid_lines_and_name_the_rest(tmp_path, make_claim):
    path = tmp_path / "01_c.claims.jsonl"
    good = make_claim()
    path.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "chapter": "02"}) + '\n{"key": 1}\nnot\n'
    )
    claims, problem = chapter_run.read_chapter_claims(path, "01_c")
    assert claims == [good]
    assert problem == (
        "claim line 2 names chapter '02'; claim line 3 is not a claim; claim line 4 is not JSON"
    )
    assert chapter_run.read_chapter_claims(tmp_path / "none.jsonl", "x") == ([], "")


def test_results_files_refuse_a_claim_of_an_unlisted_chapter_or_a_repeated_key(
    tmp_path, make_claim
):
    claim = make_claim()
    machine = machine_records.machine_facts()
    ok = {"01_c": {"status": "ok", "error": "", "seconds": 1.0}}
    machine_records.merge_results(None, machine, ok, [], "survey", claims=[claim])
    with pytest.raises(ValueError, match="not listed"):
        machine_records.merge_results(
            None, machine, ok, [], "survey", claims=[{**claim, "chapter": "02"}]
        )
    with pytest.raises(ValueError, match="repeats 01_c/k"):
        machine_records.merge_results(None, machine, ok, [], "survey", claims=[claim, claim])
    with pytest.raises(ValueError, match="status"):
        machine_records.merge_results(
            None, machine, ok, [], "survey", claims=[{**claim, "status": "MAYBE"}]
        )


def test_a_capped_run_keeps_its_own_inductor_cache(tmp_path):
    # kernels compiled under ATEN_CPU_CAPABILITY=default were reused by later uncapped runs
    # (chapter 06's compiled GELU at 0.6x eager): a capped run compiles into its own folder
    capped = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "AVX"}
    env = chapter_run.records_env(tmp_path / "r.json", "01_x", capped)
    folder = env[chapter_run.INDUCTOR_CACHE_ENV]
    assert "capped" in folder and "aten_cpu_capability_default" in folder
    assert "onednn_max_cpu_isa_avx" in folder
    plain = chapter_run.records_env(tmp_path / "r.json", "01_x", {})
    assert chapter_run.INDUCTOR_CACHE_ENV not in plain
    chosen = {**capped, chapter_run.INDUCTOR_CACHE_ENV: "/somewhere"}
    env = chapter_run.records_env(tmp_path / "r.json", "01_x", chosen)
    assert env[chapter_run.INDUCTOR_CACHE_ENV] == "/somewhere"
