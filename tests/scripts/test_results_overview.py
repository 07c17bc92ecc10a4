"""scripts/results/overview.py and kinds.py: the results page keyed by kind of machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.results import kinds, overview


@pytest.fixture(scope="module")
def claim(make_claim):
    """A measured claim (``make_claim``), its condition VNNI, its evidence a verdict line."""

    def make(chapter, key, status, advice="int8 is faster", evidence="FASTER 3.77x [3.64-4.36] x"):
        change = dict(chapter=chapter, key=key, status=status, advice=advice, evidence=evidence)
        return make_claim(**change, condition="VNNI", measured=True)

    return make


def results(source, claims, isa=("avx2",), threads=2, capped=None, chapters=("07_q",)):
    machine = {"id": "m", "isa": list(isa), "threads": threads, "gpu": "none", "cpu": "CPU"}
    machine |= {"capped": capped or {}, "torch": "2.13.0+cpu"}
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    return {
        "machine": machine,
        "source": source,
        "claims": claims,
        "records": [],
        "chapters": {c: ok for c in chapters},
    }


def test_each_machine_decision_with_its_magnitude_and_the_differing_claims(claim, tmp_path):
    book = results("book", [claim("07_q", "int8", "NOT DECIDED HERE", evidence="no VNNI")])
    vnni = results("survey", [claim("07_q", "int8", "HELD")], isa=("avx512_vnni", "avx2"))
    files = [book, vnni]
    rows = overview.claim_table(files, [[], []])
    assert rows == {
        ("07_q", "int8"): ("int8 is faster (VNNI)", ["NOT DECIDED HERE", "HELD 3.77x [3.64-4.36]"])
    }
    assert overview.differing(rows) == ([("07_q", "int8")], [])
    text = "\n".join(overview.render_overview(files, tmp_path, {}))
    head = "| claim (condition) | AVX2 only, 2 cores (book) | VNNI, no native bf16, 2 cores |"
    assert head in text
    assert "| 07 · int8 is faster (VNNI) | NOT DECIDED HERE | HELD 3.77x \\[3.64-4.36\\] |" in text
    assert "## Add your machine" in text and "make survey" in text
    assert "scripts.results.check --contributed" in text
    # the table of what pays off where comes first: on a phone the machines' facts fill a screen
    assert text.index(head) < text.index("- AVX2 only, 2 cores (book): ")


def test_a_claim_decided_from_several_comparisons_says_how_many(claim):
    cell = kinds.claim_cell(claim("07_q", "k", "HELD", evidence="2 of 2 FASTER"))
    assert cell == "HELD (2 of 2 FASTER)"
    assert kinds.claim_cell(None) == "-"
    assert kinds.claim_cell(claim("07_q", "k", "HELD"), stale=True).endswith("(stale)")


def test_a_capped_run_is_named_an_emulation_not_another_machine(claim):
    capped = results("survey", [], capped={"ONEDNN_MAX_CPU_ISA": "AVX"})
    assert kinds.kind_name(capped) == "older-CPU emulation (capped), 2 cores"
    assert "an emulation of an older CPU" in kinds.kind_facts(capped)


def test_a_survey_is_stale_where_the_chapter_code_changed_since_its_commit(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1"], "metadata": {}}]}
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "07_q.ipynb").write_text(json.dumps(nb))
    survey = results("survey", [])
    then = kinds.code_hash(json.dumps(nb))
    assert kinds.stale_chapters(survey, None, tmp_path, {"07_q": then}) == []
    nb["cells"][0]["source"] = ["x = 2"]
    (tmp_path / "book" / "07_q.ipynb").write_text(json.dumps(nb))
    assert kinds.stale_chapters(survey, None, tmp_path, {"07_q": then}) == ["07_q"]
    assert kinds.stale_chapters(results("book", []), None, tmp_path, {}) == []
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / kinds.COMMITS_FILE).write_text(f"m-survey.json abc1234 07_q {then}\n")
    assert kinds.survey_code(tmp_path) == {"m-survey.json": {"07_q": then}}


def test_a_contributed_string_stays_text(claim, tmp_path):
    evil = claim("07_q", "k", "HELD", advice="<script>x</script>\n```{x}")
    text = "\n".join(overview.render_claims_by_machine([results("survey", [evil])], tmp_path))
    assert "<script>" not in text and "```" not in text
    assert "&lt;script&gt;" in text


def test_the_stored_records_show_each_comparison_once():
    """The book's record holds a comparison under two labels: the page lists it once."""
    root = Path(__file__).resolve().parents[2]
    files = [json.loads(p.read_text()) for p in sorted((root / "results").glob("*.json"))]
    for f in files:
        unique = kinds.unique_records(f["records"])
        keys = {(r["chapter"], r["baseline_s"], r["trick_s"], r["lo"], r["hi"]) for r in unique}
        assert len(keys) == len(unique) <= len(f["records"])


def test_the_printed_claims_table_becomes_an_html_table_and_anything_else_stays_text():
    from scripts.results.other_machines import claims_html
    from tricks_helpers import claims

    book = claims.Claims("x")
    book.add(claims.from_count("bytes", "int8 is <smaller>", True, "weight bytes 0.25x"))
    html = claims_html(book.table())
    assert html.count("<tr>") == 2 and "int8 is &lt;smaller&gt;" in html
    assert 'class="claim-status claim-held">HELD<' in html
    assert claims_html("some other output\n") == ""


def test_a_chapter_page_gets_every_machine_decision_escaped(claim, tmp_path):
    from scripts.results.other_machines import chapter_table

    book = results("book", [claim("07_q", "int8", "NOT DECIDED HERE", evidence="no VNNI")])
    evil = claim("07_q", "int8", "HELD", advice="<script>x</script>")
    vnni = results("survey", [evil], isa=("avx512_vnni", "avx2"))
    block = chapter_table("07_q", [book, vnni], tmp_path)
    assert "<th>VNNI, no native bf16, 2 cores</th>" in block and "<script>" not in block
    assert "HELD 3.77x [3.64-4.36]" in block
    assert chapter_table("01_other", [book, vnni], tmp_path) == ""
