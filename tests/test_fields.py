"""tricks_helpers.fields: what a record, a claim and a skipped line may hold, checked where made.

Issue 42: the package accepted records, claims and skipped lines the results schema refused,
so the mismatch surfaced in the merge after every chapter ran. Each constructor now refuses at
once, naming the field.
"""

from __future__ import annotations

import io

import pytest

from tricks_helpers import bench, claims, fields, notebook
from tricks_helpers.bench.records import validate_record


def comparison(label: str, speedup: float = 2.0, rounds: int = 8):
    return bench.comparison_from_times(
        label, [speedup * 1e-3] * rounds, [1e-3] * rounds, threads=1, show=False
    )


GOOD = comparison("a fine label").record(chapter="01_x")
INVISIBLE = {
    "tab": "a\tb",
    "carriage return": "a\rb",
    "zero-width space": "a\u200bb",
    "zero-width joiner": "a\u200db",
    "right-to-left override": "a\u202eb",
    "right-to-left isolate": "a\u2067b",
    "byte-order mark": "a\ufeffb",
    "line separator": "a\u2028b",
    "C1 control": "a\x85b",
}


@pytest.mark.parametrize("text", list(INVISIBLE.values()), ids=list(INVISIBLE))
def test_a_record_label_with_an_invisible_or_reordering_character_is_refused(text):
    with pytest.raises(ValueError, match="validate_record: label must be one line of visible"):
        validate_record({**GOOD, "label": text})
    with pytest.raises(ValueError, match="label must be one line of visible"):
        comparison(text)


def test_a_record_label_over_300_characters_is_refused_when_compared_and_recorded():
    with pytest.raises(ValueError, match="label is 301 characters, more than 300"):
        validate_record({**GOOD, "label": "x" * 301})
    with pytest.raises(ValueError, match="label is 301 characters, more than 300"):
        comparison("x" * 301)
    assert validate_record({**GOOD, "label": "x" * 300})["label"] == "x" * 300


def test_a_record_why_over_its_limit_or_with_a_tab_is_refused():
    with pytest.raises(ValueError, match="why is 301 characters"):
        validate_record({**GOOD, "why": "w" * 301})
    with pytest.raises(ValueError, match="why must be one line"):
        validate_record({**GOOD, "why": "a\tb"})


def test_a_claim_with_a_carriage_return_or_a_bidi_control_in_its_advice_is_refused():
    with pytest.raises(ValueError, match="Claim: advice must be one line of visible text"):
        claims.from_count("k", "do\rit", True, "counted")
    with pytest.raises(ValueError, match="Claim: condition must be one line of visible text"):
        claims.from_count("k", "do it", True, "counted", condition="any\u202eCPU")


def test_from_verdicts_cuts_evidence_it_builds_over_the_limit_at_once():
    """Two long labels made a 300+ character evidence the schema refused after the run. The
    evidence of a measured claim varies with the run's digits, so it is cut at the bound when
    the claim is made (never refused mid-chapter), and what is stored passes the schema."""
    slow = [comparison("s" * 200, 0.5), comparison("t" * 200, 0.5)]
    claim = claims.from_verdicts("k", "do it", slow)
    assert len(claim.evidence) == 300 and claim.evidence.endswith("...")
    assert claim.evidence.startswith("2 of 2 not FASTER: SLOWER")


def test_claim_lengths_follow_the_one_definition():
    with pytest.raises(ValueError, match="advice is 301 characters"):
        claims.from_count("k", "a" * 301, True, "counted")
    with pytest.raises(ValueError, match="condition is 201 characters"):
        claims.from_count("k", "a", True, "counted", condition="c" * 201)
    with pytest.raises(ValueError, match="key is 61 characters"):
        claims.from_count("k" * 61, "a", True, "counted")
    with pytest.raises(ValueError, match="Claim.record: chapter"):
        claims.from_count("k", "a", True, "counted").record("../x")


def test_a_claim_status_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="status"):
        claims.Claim("k", "a", "any CPU", "MAYBE", "e", measured=False)


def test_a_skipped_section_over_200_characters_or_with_a_tab_is_refused():
    out = io.StringIO()
    with pytest.raises(ValueError, match="skipped: section is 201 characters, more than 200"):
        notebook.skipped("s" * 201, "torchao >= 0.18", "torchao 0.16.0", stream=out)
    with pytest.raises(ValueError, match="skipped: needs must be one line of visible text"):
        notebook.skipped("int4", "torchao\t>= 0.18", "torchao 0.16.0", stream=out)
    with pytest.raises(ValueError, match="skipped: reason is 301 characters, more than 300"):
        notebook.skipped("int4", "n" * 140, "h" * 140, stream=out)
    assert out.getvalue() == ""  # refused before anything was printed


def test_the_statuses_and_verdicts_named_here_are_the_package_s():
    assert set(fields.RECORD) <= set(bench.records.FIELDS)
    assert set(fields.CLAIM) <= set(claims.CLAIM_FIELDS)
    assert fields.RECORD["chapter"] == fields.CLAIM["chapter"]


def test_check_text_names_the_field_and_the_code_point():
    spec = fields.Text(5, 1, r"^[a-z]+$")
    assert fields.check_text("f", "name", "abc", spec) == "abc"
    with pytest.raises(TypeError, match="f: name must be"):
        fields.check_text("f", "name", 3, spec)
    with pytest.raises(ValueError, match="f: name must not be empty"):
        fields.check_text("f", "name", " ", spec)
    with pytest.raises(ValueError, match="U\\+200B at 1"):
        fields.check_text("f", "name", "a\u200bc", spec)
    with pytest.raises(ValueError, match="has characters outside"):
        fields.check_text("f", "name", "aB", spec)
