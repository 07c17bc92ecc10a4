"""scripts/compat/outcome.py: a chapter's compat line from its executed notebook."""

from __future__ import annotations

import nbformat

from scripts.book import chapter_run
from scripts.compat import outcome as compat_outcome

SKIP = "[skipped] int4 weight-only: needs torchao>=0.18, this run has 0.16.0\n"


def error_output(ename="ImportError", evalue="cannot import name 'X'\nmore lines"):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def entry(make_notebook, cells, error=""):
    nb = nbformat.read(make_notebook("01_x.ipynb", cells), as_version=4)
    return compat_outcome.entry(nb, 1.26, error, "2026-11-27", "abc123")


def test_a_chapter_that_ran(make_notebook):
    item = entry(make_notebook, ["# 01 · T", {"outputs": ["fine\n"]}])
    assert item["status"] == "ran" and item["failed_cell"] is None and item["error"] == ""
    assert item["seconds"] == 1.3 and item["skipped"] == []
    assert compat_outcome.line("01_x", item) == "01_x  ran  (1.3 s)"


def test_skipped_sections_exact_prefix_any_output_once_each(make_notebook):
    result = {"output_type": "execute_result", "execution_count": 3, "metadata": {}}
    result["data"] = {"text/plain": "[skipped] fp8: needs a GPU with fp8"}
    cells = [
        {"outputs": ["before\n" + SKIP]},
        {"outputs": [SKIP, " [skipped] indented: not a skip\n", "[skipped]no space\n"]},
        {"outputs": [result]},
        {"outputs": ["[skipped] bare section\n"]},
    ]
    item = entry(make_notebook, cells)
    assert item["status"] == "ran"
    assert item["skipped"] == [
        {"section": "int4 weight-only", "reason": "needs torchao>=0.18, this run has 0.16.0"},
        {"section": "fp8", "reason": "needs a GPU with fp8"},
        {"section": "bare section", "reason": ""},
    ]
    assert compat_outcome.line("01_x", item) == (
        "01_x  ran, 3 sections skipped: int4 weight-only (needs torchao>=0.18, this run has "
        "0.16.0); fp8 (needs a GPU with fp8); bare section  (1.3 s)"
    )


def test_failed_cell_counts_code_cells_from_one_markdown_not_counted(make_notebook):
    cells = [
        "# 01 · T",
        {"source": "colab", "tags": ["colab-setup"]},
        "prose between",
        {"outputs": [SKIP]},
        "more prose",
        {"outputs": [error_output()]},
        {"outputs": [error_output("ValueError", "later")]},
    ]
    item = entry(make_notebook, cells, error="code cell 3: ImportError: cannot import name 'X'")
    assert item["status"] == "failed" and item["failed_cell"] == 3
    assert item["error"] == "ImportError: cannot import name 'X'"
    assert item["skipped"][0]["section"] == "int4 weight-only"  # kept beside the failure
    assert compat_outcome.line("01_x", item, 6) == (
        "01_x    failed at code cell 3: ImportError: cannot import name 'X'  (1.3 s)"
    )


def test_a_failure_without_an_error_output_keeps_the_runners_line(make_notebook):
    item = entry(make_notebook, [{"outputs": []}], error="timeout after 600 s per cell: x\ny")
    assert (item["status"], item["failed_cell"], item["error"]) == (
        "failed",
        None,
        "timeout after 600 s per cell: x",
    )
    assert compat_outcome.outcome_text(item) == "failed: timeout after 600 s per cell: x"
    unreadable = compat_outcome.entry(None, 0, "unreadable notebook: NotJSONError: x", "d", "c")
    assert unreadable["code_sha256"] is None and unreadable["status"] == "failed"


def test_code_digest_follows_code_not_outputs_prose_or_the_colab_cell(make_notebook):
    def digest(cells):
        path = make_notebook("d.ipynb", cells)
        return compat_outcome.code_digest(nbformat.read(path, as_version=4))

    base = digest(["# T", {"source": "colab v1", "tags": ["colab-setup"]}, {"source": "a = 1"}])
    assert base == digest(
        ["# T, reworded", {"source": "colab v2", "tags": ["colab-setup"]}, {"source": "a = 1"}]
    )
    assert base == digest([{"source": "a = 1", "outputs": ["printed\n"]}])
    assert base != digest([{"source": "a = 2"}])
    assert len(base) == 64


def test_a_real_execution_through_the_runner(make_notebook):
    """The runner's kernel: a skip line, then a failure in code cell 3 (after a markdown cell)."""
    path = make_notebook(
        "07_q.ipynb",
        [
            "# 07 · Q",
            {"source": "x = 1"},
            {"source": f"print({SKIP!r}, end='')"},
            "prose",
            {"source": "raise KeyError('missing row')"},
            {"source": "print('never')"},
        ],
        number=False,
    )
    done = chapter_run.run_chapter(path, timeout=120)
    item = compat_outcome.entry(done.nb, done.seconds, done.error, "2026-11-27", "c")
    assert compat_outcome.outcome_text(item) == "failed at code cell 3: KeyError: 'missing row'"
    assert item["skipped"][0]["reason"] == "needs torchao>=0.18, this run has 0.16.0"
