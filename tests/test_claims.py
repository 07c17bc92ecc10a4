"""tricks_helpers.claims: advice decided by the run, three statuses, one table, one tip clause."""

from __future__ import annotations

import re

import pytest

from tricks_helpers import bench, claims


def comparison(label: str, speedup: float, rounds: int = 8):
    """A comparison whose every round has the same ratio: its verdict follows from `speedup`."""
    return bench.comparison_from_times(
        label, [speedup * 1e-3] * rounds, [1e-3] * rounds, threads=1, show=False
    )


FAST, SLOW, SAME = comparison("a", 2.0), comparison("b", 0.5), comparison("c", 1.0)


def test_every_comparison_meeting_the_expectation_holds():
    c = claims.from_verdicts("k", "do it", [FAST, comparison("d", 3.0)])
    assert c.status == claims.HELD and c.measured
    assert c.evidence == "2 of 2 FASTER"
    one = claims.from_verdicts("k", "do it", {"x": FAST})
    assert one.evidence.startswith("FASTER 2.00x") and one.evidence.endswith(" a")


def test_one_miss_is_not_held_and_named_never_pooled():
    c = claims.from_verdicts("k", "do it", [FAST, SLOW, SAME])
    assert c.status == claims.NOT_HELD
    assert c.evidence.startswith("2 of 3 not FASTER: SLOWER 0.50x")
    assert "NO CLEAR DIFFERENCE 1.00x [1.00-1.00] c" in c.evidence
    many = claims.from_verdicts("k", "x", [SLOW, SLOW, SLOW, SAME])
    assert many.evidence.endswith("(+2 more)")


def test_not_slower_accepts_no_clear_difference_and_refuses_slower():
    assert claims.from_verdicts("k", "free", [SAME, FAST], expect=claims.NOT_SLOWER).status == (
        claims.HELD
    )
    costly = claims.from_verdicts("k", "free", [SLOW], expect=claims.NOT_SLOWER)
    assert costly.status == claims.NOT_HELD
    assert costly.evidence.startswith("1 of 1 SLOWER: SLOWER 0.50x")


def test_an_absent_condition_decides_nothing_whatever_was_measured():
    c = claims.from_verdicts(
        "k",
        "bf16 is faster",
        [SLOW],
        condition="native bf16",
        condition_holds=False,
        missing="bf16 emulated on this CPU",
    )
    assert (c.status, c.evidence, c.measured) == (
        claims.NOT_DECIDED,
        "bf16 emulated on this CPU",
        False,
    )
    with pytest.raises(ValueError, match="say what is `missing`"):
        claims.from_verdicts("k", "x", [SLOW], condition_holds=False)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="at least one comparison"):
        claims.from_verdicts("k", "x", [])
    with pytest.raises(ValueError, match="expect"):
        claims.from_verdicts("k", "x", [FAST], expect="QUICKER")
    with pytest.raises(TypeError, match="comparison"):
        claims.from_verdicts("k", "x", [1.5])
    with pytest.raises(TypeError, match="holds"):
        claims.from_count("k", "x", 1, "one")
    with pytest.raises(ValueError, match="one non-empty line"):
        claims.from_count("k", "two\nlines", True, "e")
    with pytest.raises(ValueError, match="letters, digits and hyphens"):
        claims.from_count("", "x", True, "e")
    with pytest.raises(ValueError, match="letters, digits and hyphens"):
        claims.from_count("two words", "x", True, "e")
    with pytest.raises(ValueError, match="status"):
        claims.Claim("k", "x", "any", "MAYBE", "e", measured=False)


def test_counted_claims_carry_their_fact():
    c = claims.from_count("bytes", "int8 weights are 4x smaller", True, "weight bytes 0.25x")
    assert (c.status, c.measured) == (claims.HELD, False)
    assert claims.from_count("b", "x", False, "e").status == claims.NOT_HELD


def test_the_table_prints_counts_status_advice_condition_and_evidence():
    book = claims.Claims("07 · Quantization")
    book.add(claims.from_count("bytes", "int8 is smaller", True, "weight bytes 0.25x"))
    book.add(claims.from_verdicts("speed", "int8 is faster", [SLOW], condition="VNNI"))
    book.add(claims.not_decided("gpu", "use a GPU kernel", condition="a GPU", missing="no CUDA"))
    lines = book.table().splitlines()
    assert lines[0] == "claims decided by this run: 1 held, 1 not held here, 1 not decided here"
    assert lines[1] == "  HELD              bytes: int8 is smaller [any machine]"
    assert lines[2] == "    counted: weight bytes 0.25x"
    assert lines[3].startswith("  NOT HELD HERE     speed: int8 is faster [VNNI]")
    assert lines[4].startswith("    measured: 1 of 1 not FASTER: SLOWER")
    assert lines[6] == "    condition absent: no CUDA"
    assert book.counts() == {claims.HELD: 1, claims.NOT_HELD: 1, claims.NOT_DECIDED: 1}
    assert book.tip_clause() == (
        "On this run: 1 held, 1 not held here, 1 not decided here; not held here: speed."
    )
    assert len(book) == 3 and book["gpu"].status == claims.NOT_DECIDED


def test_the_sanitize_file_masks_what_differs_between_machines_and_keeps_the_rest(sanitize):
    book = claims.Claims("x")
    book.add(claims.from_count("bytes", "int8 is smaller", True, "weight bytes 0.25x"))
    book.add(claims.from_verdicts("speed", "int8 is faster", [SLOW]))
    other = claims.Claims("x")
    other.add(claims.from_count("bytes", "int8 is smaller", True, "weight bytes 0.25x"))
    other.add(claims.from_verdicts("speed", "int8 is faster", [FAST, FAST]))
    assert sanitize(book.table()) == sanitize(other.table())
    assert sanitize(book.tip_clause()) == sanitize(other.tip_clause())
    assert "speed: int8 is faster [any CPU]" in sanitize(book.table())
    assert "counted: weight bytes 0.25x" in sanitize(book.table())
    changed = claims.Claims("x")
    changed.add(claims.from_count("bytes", "int8 is smaller", False, "weight bytes 0.50x"))
    changed.add(claims.from_verdicts("speed", "int8 is faster", [SLOW]))
    assert sanitize(changed.table()) != sanitize(book.table())  # a count is compared


def test_add_refuses_duplicates_and_an_empty_table_refuses_to_print():
    book = claims.Claims("x")
    with pytest.raises(ValueError, match="no claims"):
        book.table()
    book.add(claims.from_count("k", "x", True, "e"))
    with pytest.raises(ValueError, match="added before"):
        book.add(claims.from_count("k", "y", True, "e"))
    with pytest.raises(TypeError, match="claim"):
        book.add("k")


def test_glue_returns_the_clause_and_stores_it_for_the_tip(monkeypatch):
    glued = {}
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.update({name: value}))
    book = claims.Claims("x")
    book.add(claims.from_count("k", "x", True, "e"))
    assert book.glue("claims-x") == glued["claims-x"]
    assert re.fullmatch(
        r"On this run: 1 held, 0 not held here, 0 not decided here\.", glued["claims-x"]
    )


def test_glue_records_every_claim_where_the_runner_names_a_file(tmp_path, monkeypatch):
    import json

    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: None)
    book = claims.Claims("x")
    book.add(claims.from_count("bytes", "int8 is smaller", True, "0.25x"))
    book.add(claims.from_verdicts("speed", "int8 is faster", [SLOW], condition="VNNI"))
    target = tmp_path / "07_q.jsonl"
    book.glue("claims-07", environ={claims.CLAIMS_ENV: str(target)})
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["key"] for r in lines] == ["bytes", "speed"]
    assert lines[1] == {
        "chapter": "07_q",
        "key": "speed",
        "advice": "int8 is faster",
        "condition": "VNNI",
        "status": claims.NOT_HELD,
        "evidence": book["speed"].evidence,
        "measured": True,
    }
    chaptered = tmp_path / "c.jsonl"
    book.glue(
        "claims-07", environ={claims.CLAIMS_ENV: str(chaptered), "TRICKS_RECORDS_CHAPTER": "07"}
    )
    assert json.loads(chaptered.read_text().splitlines()[0])["chapter"] == "07"
    book.glue("claims-07", environ={})  # no file named: nothing written anywhere
    assert sorted(p.name for p in tmp_path.iterdir()) == ["07_q.jsonl", "c.jsonl"]
