"""scripts/audits/claims.py: claims-table, claims-in-tip, roof-upper-bound on planted cells."""

from __future__ import annotations

import pytest

from scripts.audits import claims as audit_claims
from tricks_helpers import bench, claims

TITLE = "# 07 · Q\n\n```{admonition} Do this\n:class: tip\nQuantize. {glue:text}`claims-07`\n```\n"


def comparison(label: str, speedup: float):
    return bench.comparison_from_times(label, [speedup] * 8, [1.0] * 8, threads=1, show=False)


def glue_output(book: claims.Claims, name: str, monkeypatch) -> dict:
    """The display_data output myst-nb's glue stores, made by myst-nb itself."""
    import myst_nb.ext.glue as glue_module

    shown = []
    monkeypatch.setattr(
        glue_module, "ipy_display", lambda data, raw, metadata: shown.append((data, metadata))
    )
    book.glue(name)
    data, metadata = shown[0]
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def cells(book: claims.Claims, monkeypatch, title: str = TITLE, glue_name: str = "claims-07"):
    return [
        {"cell_type": "markdown", "source": title},
        {
            "cell_type": "code",
            "source": "print(book.table())",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": book.table() + "\n"},
                glue_output(book, glue_name, monkeypatch),
            ],
        },
    ]


def chapter(speedup: float) -> claims.Claims:
    book = claims.Claims("07 · Q")
    book.add(claims.from_count("smaller", "int8 weights are smaller", True, "0.25x"))
    book.add(claims.from_verdicts("int8-faster", "int8 is faster", [comparison("x", speedup)]))
    return book


def test_a_tip_naming_a_failed_claim_by_its_key_fails(monkeypatch):
    """Issue 40: the tip names claims in words (their advice), not by keys a reader cannot read."""
    found = cells(chapter(0.5), monkeypatch)
    glued = found[1]["outputs"][1]["data"]
    mime = next(m for m in glued if m.endswith("text/plain"))
    glued[mime] = glued[mime].replace("\u201cint8 is faster\u201d", "int8-faster")
    assert audit_claims.claims_problems(found) == [
        "claims-in-tip: the stored run did not bear out claim 'int8-faster', "
        "and the tip does not say so"
    ]


def test_a_chapter_whose_tip_carries_the_run_clause_passes_held_or_not(monkeypatch):
    assert audit_claims.claims_problems(cells(chapter(2.0), monkeypatch)) == []
    assert audit_claims.claims_problems(cells(chapter(0.5), monkeypatch)) == []


def test_a_clause_that_also_names_undecided_claims_still_names_the_not_held(monkeypatch):
    book = chapter(0.5)  # int8-faster NOT HELD HERE
    open_ = bench.comparison_from_times("y", [0.8e-3, 1.2e-3] * 3, [1e-3] * 6, show=False)
    book.add(claims.from_verdicts("open", "y is faster", [open_]))
    assert book["open"].status == claims.UNDECIDED
    assert book.tip_clause().endswith(
        "not held here: \u201cint8 is faster\u201d; undecided: \u201cy is faster\u201d."
    )
    assert audit_claims.claims_problems(cells(book, monkeypatch)) == []


def test_a_contradicted_claim_fails_when_the_tip_does_not_say_so(monkeypatch):
    contradicted = cells(chapter(0.5), monkeypatch)
    held_clause = cells(chapter(2.0), monkeypatch)[1]["outputs"][1]
    contradicted[1]["outputs"][1] = held_clause  # the tip's clause from a run where it held
    problems = audit_claims.claims_problems(contradicted)
    assert problems == [
        "claims-in-tip: the stored run did not bear out claim 'int8-faster', "
        "and the tip does not say so"
    ]


def test_a_tip_without_the_clause_or_a_clause_never_glued_fails(monkeypatch):
    plain = TITLE.replace(" {glue:text}`claims-07`", "")
    assert audit_claims.claims_problems(cells(chapter(0.5), monkeypatch, title=plain)) == [
        "claims-in-tip: the tip shows no run clause ({glue:text}`claims-NN` in the title cell)"
    ]
    other = cells(chapter(2.0), monkeypatch, glue_name="claims-99")
    assert audit_claims.claims_problems(other)[0].startswith(
        "claims-in-tip: the tip names 'claims-07' but no stored output glued it"
    )


def test_a_chapter_without_a_claims_table_fails(monkeypatch):
    found = cells(chapter(2.0), monkeypatch)
    found[1]["outputs"][0]["text"] = "no table here\n"
    assert audit_claims.claims_problems(found)[0].startswith("claims-table: no claims table")


@pytest.mark.parametrize(
    "line, bad",
    [
        ("int8 dyn (legacy)  batch 64  ~102% of the ceiling", True),
        ("float32 batch 1 ~67.2% of bandwidth", False),
        ("  ~91% of the bfloat16 limit", False),
        ("  ~191% of the bfloat16 limit", True),
        ("achieved ~1,050% of this machine's copy bandwidth", True),
        ("~150% more images", False),
    ],
)
def test_roof_upper_bound_flags_a_point_above_its_roof(line, bad):
    found = [{"cell_type": "code", "outputs": [{"output_type": "stream", "text": line}]}]
    assert bool(audit_claims.roof_problems(found)) is bad


def code(source: str) -> dict:
    return {"cell_type": "code", "source": source, "execution_count": None, "outputs": []}


def declarations(n: int) -> str:
    """``n`` claims declared as the old claims cell did, 5 lines each."""
    return "".join(
        f"book.add(\n    claims.from_count(\n        'k{i}', 'advice {i}', True, 'counted'\n"
        "    )\n)\n"
        for i in range(n)
    )


def test_the_old_shape_a_120_line_claims_cell_fails():
    """Issue 38: one hidden cell at the end declaring every claim (71-177 lines) is refused."""
    old = [code("book = claims.Claims('07 · Q')"), code(declarations(24) + "print(book.table())")]
    assert len(old[1]["source"].splitlines()) == 121
    problems = audit_claims.claims_size_problems(old)
    assert problems == [
        f"cell 1: 120 lines of claim declarations, more than {audit_claims.MAX_CLAIM_LINES}: "
        "declare each claim in the cell that prints its evidence (rule claims-cell-size)",
        f"cell 1: the claims table cell is 121 lines, more than {audit_claims.MAX_CLAIM_LINES}: "
        "it only prints what was declared (rule claims-cell-size)",
    ]


def test_claims_declared_beside_their_evidence_pass():
    beside = [code("book = claims.Claims('07 · Q')")]
    beside += [code(f"x = {i}\nprint(x)\n" + declarations(1)) for i in range(24)]
    beside.append(code("print(book.table())"))
    assert audit_claims.claims_size_problems(beside) == []
    bound = audit_claims.MAX_CLAIM_LINES
    at_bound = [code("book = claims.Claims('x')"), code(declarations(bound // 5))]
    assert audit_claims.claims_size_problems(at_bound) == []
    # record() calls count too, and a call on another object (a comparison's record) does not
    records = "".join(f"book.record('k{i}', 'a', c)\nc.record()\n" for i in range(bound + 1))
    assert audit_claims.claims_size_problems([code("book = claims.Claims('x')"), code(records)])


def test_the_stored_chapters_declare_claims_within_the_bound(repo_root):
    import json

    from scripts.book.find_notebooks import chapter_notebooks

    for path in chapter_notebooks(repo_root):
        cells_ = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert audit_claims.claims_size_problems(cells_) == [], path.name


def test_the_notebook_audit_runs_the_claims_cell_size_rule(tmp_path):
    import json

    from scripts.audits import notebooks as audit_notebooks

    path = tmp_path / "07_q.ipynb"
    old = [code("book = claims.Claims('07 · Q')"), code(declarations(24) + "print(book.table())")]
    for n, cell in enumerate(old, 1):
        cell["execution_count"] = n
    path.write_text(json.dumps({"cells": old, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = audit_notebooks.audit_notebook(path, chapter_rules=False).problems
    assert sum("(rule claims-cell-size)" in p for p in found) == 2
