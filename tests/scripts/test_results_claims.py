"""scripts/results/claims.py: claims by machine on the results page, rendered as text."""

from __future__ import annotations

import pytest

from scripts.results.claims import claim_rows, render_claims


@pytest.fixture(scope="module")
def claim(make_claim):
    """A measured claim of chapter 07 (``make_claim``), its condition VNNI."""

    def make(chapter, key, status, advice="int8 is faster"):
        change = dict(chapter=chapter, key=key, status=status, advice=advice)
        return make_claim(**change, condition="VNNI", measured=True)

    return make


def results(machine, source, claims):
    return {"machine": {"id": machine}, "source": source, "claims": claims}


@pytest.fixture(scope="module")
def book(claim):
    return results(
        "epyc-2t", "book", [claim("07_q", "int8", "NOT HELD HERE"), claim("07_q", "b", "HELD")]
    )


@pytest.fixture(scope="module")
def amx(claim):
    return results("xeon-amx-16t", "survey", [claim("07_q", "int8", "HELD")])


def test_one_row_per_claim_one_column_per_machine(book, amx):
    rows = claim_rows([book, amx])
    assert rows == {
        ("07_q", "int8"): ("int8 is faster (VNNI)", ["NOT HELD HERE", "HELD"]),
        ("07_q", "b"): ("int8 is faster (VNNI)", ["HELD", "-"]),
    }
    text = "\n".join(render_claims([book, amx]))
    assert "| chapter | claim | advice (condition) | epyc-2t (book) | xeon-amx-16t |" in text
    assert "| 07_q | int8 | int8 is faster (VNNI) | NOT HELD HERE | HELD |" in text
    assert "- 07_q: int8: epyc-2t (book) NOT HELD HERE; xeon-amx-16t HELD" in text
    assert "07_q: b:" not in text.split("decided differently")[1]  # one machine: no difference


def test_no_claims_no_section_and_one_machine_no_differs_list(book):
    assert render_claims([results("m", "book", [])]) == []
    assert render_claims([]) == []
    assert "decided differently" not in "\n".join(render_claims([book]))


def test_a_contributed_string_stays_text(claim):
    evil = results("m", "survey", [claim("07_q", "k", "HELD", advice="<script>x</script>\n```{x}")])
    text = "\n".join(render_claims([evil]))
    assert "<script>" not in text and "```" not in text
    assert "&lt;script&gt;" in text
