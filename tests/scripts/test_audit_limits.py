"""scripts/audits/limits.py: limits-one-set and limits-above-rate (issue 39), on planted
stored outputs and results files; and the runner's one set of limits per machine."""

from __future__ import annotations

import json

import pytest

from scripts.audits import limits as audit_limits
from scripts.audits import notebooks as audit_notebooks
from scripts.book import chapter_run, run_limits, run_notebooks
from tricks_helpers import limits

RECORDED = {
    "threads": 2,
    "cache_bytes": 2**25,
    "bandwidth": 12.9e9,
    "matmul": {"float32": 96.6e9, "bfloat16": 42.6e9, "int8": 188e9},
    "skipped": {},
    "probe": limits.PROBE_VERSION,
}


def cells(lim: limits.Limits) -> list[dict]:
    return [
        {
            "cell_type": "code",
            "source": "print(lim)",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": "\n".join(lim.lines()) + "\n"}
            ],
        }
    ]


def recorded(**change) -> limits.Limits:
    return limits.Limits.from_record({**RECORDED, **change}, "recorded for this machine (x)")


def test_chapters_printing_the_recorded_set_pass():
    printed = {
        "04_a": audit_limits.printed_limits(cells(recorded())),
        "07_b": audit_limits.printed_limits(cells(recorded())),
    }
    assert printed["04_a"]["int8"] == {"188"} and printed["04_a"]["bandwidth"] == {"12.9"}
    assert audit_limits.one_set_problems(printed, RECORDED) == []


def test_two_chapters_measuring_their_own_limits_fail():
    """The old code: 04 measured bf16 at ~2.45 GFLOP/s, 07 ~34, on one machine."""
    old_04 = recorded(matmul={"float32": 96.6e9, "bfloat16": 2.45e9, "int8": 188e9})
    old_07 = recorded(matmul={"float32": 96.6e9, "bfloat16": 34e9, "int8": 188e9})
    printed = {
        "04_a": audit_limits.printed_limits(cells(old_04)),
        "07_b": audit_limits.printed_limits(cells(old_07)),
    }
    problems = audit_limits.one_set_problems(printed, None)
    assert problems == [
        "limits-one-set: chapters print different bfloat16 limits: ~2.45 in 04_a; ~34 in 07_b"
    ]
    against_record = audit_limits.one_set_problems(printed, RECORDED)
    assert any("04_a prints the bfloat16 limit ~2.45" in p for p in against_record)


def test_a_limit_raised_mid_page_is_two_values_of_one_limit():
    both = cells(recorded()) + cells(recorded(bandwidth=14.5e9))
    problems = audit_limits.one_set_problems({"07_b": audit_limits.printed_limits(both)}, None)
    assert problems == [
        "limits-one-set: 07_b prints 2 values of the bandwidth limit (12.9, 14.5): "
        "one machine, one set"
    ]


def test_a_rate_above_its_limit_fails():
    """The old code: 07's width sweep reached 134-188 GOP/s int8 over a ~3.28 recorded roof."""
    data = {"limits": {**RECORDED, "matmul": {"int8": 3.28e9}, "observed": {}}}
    data["limits"]["observed"] = {"07_b": {"int8": 188e9, "bandwidth": 1e9}}
    (problem,) = audit_limits.above_rate_problems(data, "m.json")
    assert problem.startswith("limits-above-rate: m.json: 07_b reached int8 at 57.3x")
    data["limits"]["observed"]["07_b"]["int8"] = 3.28e9  # at the limit: fine
    assert audit_limits.above_rate_problems(data, "m.json") == []
    data["limits"]["observed"]["07_b"]["float16"] = 1e9
    assert "no limit" in audit_limits.above_rate_problems(data, "m.json")[0]


def test_the_notebook_audit_runs_the_limits_rules(tmp_book, capsys):
    root = tmp_book({"04_a": cells(recorded()), "07_b": cells(recorded(bandwidth=14.5e9))})
    (root / "results").mkdir()
    (root / "results" / "m.json").write_text(json.dumps({"source": "book", "limits": RECORDED}))
    assert audit_notebooks.main([], root=root) == 1
    out = capsys.readouterr().out
    assert "PROBLEM limits-one-set: 07_b prints the bandwidth limit ~14.5" in out
    assert out.count("PROBLEM limits-") == 2  # the other hits: no claims table, no tip


def test_machine_limits_reads_the_recorded_set(tmp_path):
    target = tmp_path / "limits.json"
    target.write_text(json.dumps({"file": "results/m.json", "limits": RECORDED}))
    lim = limits.machine_limits(["float32"], environ={limits.LIMITS_ENV: str(target)})
    assert lim.matmul == {"float32": 96.6e9} and lim.bandwidth == 12.9e9  # the dtypes asked
    every = limits.machine_limits(environ={limits.LIMITS_ENV: str(target)})
    assert every.matmul == RECORDED["matmul"]
    assert lim.lines()[0].startswith(
        "[hardware] limits on 2 thread(s), recorded for this machine (results/m.json);"
    )
    target.write_text("{}")
    with pytest.raises(ValueError, match="recorded limits in .* are unusable"):
        limits.machine_limits(environ={limits.LIMITS_ENV: str(target)})


def test_machine_limits_measures_without_a_record():
    lim = limits.machine_limits(["float32"], budget_s=0.2, environ={})
    assert set(lim.matmul) == {"float32"}
    assert "measured by this page (no limits recorded for this machine)" in lim.lines()[0]


def test_raised_appends_the_pages_rates_for_the_runner(tmp_path, monkeypatch, make_limits):
    target = tmp_path / "rates.jsonl"
    monkeypatch.setenv(limits.RATES_ENV, str(target))
    monkeypatch.setenv("TRICKS_RECORDS_CHAPTER", "07_b")
    make_limits().raised("the block", matmul={"float32": 50e9}, bandwidth=20e9)
    assert chapter_run.read_chapter_rates(target, "07_b") == {
        "float32": 50e9,
        "bandwidth": 20e9,
    }
    assert chapter_run.read_chapter_rates(target, "04_a") == {}


def test_the_runner_raises_each_limit_to_the_fastest_chapter_rate(capsys):
    ran = [
        run_notebooks.Outcome("07_b.ipynb", 1.0, rates={"int8": 200e9, "float32": 50e9}),
        run_notebooks.Outcome("04_a.ipynb", 1.0, rates={"bandwidth": 13e9}),
    ]
    old = {**RECORDED, "observed": {"03_c": {"float32": 90e9}, "04_a": {"bfloat16": 1e9}}}
    out = run_limits.raise_limits(old, ran)
    assert out["matmul"]["int8"] == 200e9 and out["where"]["int8"] == "07_b"
    assert out["bandwidth"] == 13e9 and out["matmul"]["float32"] == 96.6e9
    assert out["observed"] == {  # 03 kept, 04 replaced by its new run
        "03_c": {"float32": 90e9},
        "04_a": {"bandwidth": 13e9},
        "07_b": {"float32": 50e9, "int8": 200e9},
    }
    assert audit_limits.above_rate_problems({"limits": out}) == []
    assert "limits: int8 raised by 07_b (1.06x the recorded one)" in capsys.readouterr().out


def test_the_runner_hands_one_set_the_highest_ever_observed(tmp_path, make_limits):
    probes = [make_limits(bandwidth=10e9), make_limits(bandwidth=4e9)]  # the 2nd run: loaded
    seen: list[float] = []
    nb = [tmp_path / "book" / "01_a.ipynb", tmp_path / "book" / "02_b.ipynb"]

    def runner(path, write, timeout):  # a chapter reads the one set the runner hands it
        seen.append(limits.machine_limits().bandwidth)
        rates = {"bandwidth": 11e9} if path.stem == "01_a" else {}
        return run_notebooks.Outcome(path.name, 0.1, rates=rates)

    run_notebooks.run(nb, "book", runner=runner, measure=lambda: probes.pop(0))
    run_notebooks.run(nb, "book", runner=runner, measure=lambda: probes.pop(0))
    # 02 reads 01's raise; the loaded probe never lowers the record
    assert seen == [10e9, 11e9, 11e9, 11e9]
    (results,) = (tmp_path / "results").glob("*.json")
    assert json.loads(results.read_text())["limits"]["observed"] == {"01_a": {"bandwidth": 11e9}}


def test_a_run_of_some_chapters_hands_the_recorded_set_unprobed(tmp_path, make_limits):
    """A run of one chapter must not raise the limits that the chapters it leaves alone print
    (they would print another set: limits-one-set); only a run of every chapter probes again."""
    book = tmp_path / "book"
    book.mkdir()
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n- file: book/01_a\n- file: book/02_b\n"
    )
    (book / "intro.md").write_text("# intro\n")
    nb = [book / "01_a.ipynb", book / "02_b.ipynb"]
    for p in nb:
        p.write_text("{}")
    probes = [make_limits(bandwidth=10e9), make_limits(bandwidth=12e9), make_limits(bandwidth=14e9)]
    seen: list[float] = []

    def runner(path, write, timeout):
        seen.append(limits.machine_limits().bandwidth)
        return run_notebooks.Outcome(path.name, 0.1)

    run_notebooks.run(nb, "book", runner=runner, measure=lambda: probes.pop(0))
    run_notebooks.run(nb[:1], "book", runner=runner, measure=lambda: probes.pop(0))
    assert seen == [10e9, 10e9, 10e9] and len(probes) == 2  # one chapter: the recorded set
    run_notebooks.run(nb, "book", runner=runner, measure=lambda: probes.pop(0))
    assert seen[-2:] == [12e9, 12e9]  # every chapter: probed again, raised


def test_the_probe_line_names_the_results_file(capsys, make_limits):
    """The runner's line names the file the limits are recorded in, whatever the probe raised
    (a loop over the dtypes once reused the file name's variable: 'recorded in int8')."""
    old = {"limits": {**RECORDED, "where": {}}}
    run_limits.run_limits(old, "m.json", measure=lambda: make_limits(bandwidth=99e9))
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("limits: recorded in m.json; raised by the new probe:"), line
