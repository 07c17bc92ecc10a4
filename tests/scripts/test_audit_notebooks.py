"""Tests of scripts/audits/notebooks.py: the stored-notebook audit behind `make audit`."""

from __future__ import annotations

import json

import pytest

from scripts.audits import code_cells
from scripts.audits import notebooks as audit_notebooks
from scripts.book.notebook_cells import stored_text
from tricks_helpers import bench

PNG = {
    "output_type": "display_data",
    "metadata": {},
    "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
}
FIGURE_META = {
    "mystnb": {
        "figure": {"caption": "What it shows.", "name": "fig-01-x"},
        "image": {"alt": "A line rising."},
    }
}


TITLE = "# 01 · X\n\n```{admonition} Do this\n:class: tip\nDo the thing.\n```\n"


def audit(make_notebook, cells, **kw):
    """The audit of scratch cells under a title: the rules of a whole chapter (claims, recipe,
    folded timings) are left out; they are tested on a complete chapter below."""
    kw.setdefault("chapter_rules", False)
    return audit_notebooks.audit_notebook(make_notebook("01_x.ipynb", [TITLE] + cells), **kw)


def complete_chapter(title="A"):
    """A chapter with what every chapter has: a recipe under the tip, the claims table at its
    end and the glued clause the tip shows."""
    table = (
        "claims decided by this run: 1 held, 0 not held here, 0 not decided here\n"
        "  HELD              k: do it [any machine]\n    counted: e\n"
    )
    glue = {
        "output_type": "display_data",
        "metadata": {
            "scrapbook": {"name": "claims-01", "mime_prefix": "application/papermill.record/"}
        },
        "data": {"application/papermill.record/text/plain": "'On this run: 1 held.'"},
    }
    tip = TITLE.replace("X", title).replace("Do the thing.", "Do the thing. {glue:text}`claims-01`")
    return [
        tip,
        code("import torch\nx = torch.ones(2)", tags=["recipe"]),
        code(outputs=[table, glue]),
    ] + ["text"] * 8


def test_a_chapters_own_rules_run_by_default_and_a_complete_chapter_passes(make_notebook):
    bare = audit_notebooks.audit_notebook(make_notebook("01_x.ipynb", [TITLE, code()]))
    assert any(p.startswith("claims-table:") for p in bare.problems)
    assert any(p.startswith("recipe-first:") for p in bare.problems)
    whole = audit_notebooks.audit_notebook(make_notebook("01_y.ipynb", complete_chapter()))
    assert whole.problems == []


@pytest.mark.parametrize(
    "title",
    [
        "# 01 · X\n\nNo tip here.",
        "# 01 · X\n\n```{tip} Do this\nrendered as body text, not a title\n```\n",
        "# 01 · X\n\n```{admonition} Do this\nno tip class\n```\n",
    ],
)
def test_a_title_cell_without_a_do_this_tip_fails(make_notebook, title):
    a = audit_notebooks.audit_notebook(make_notebook("01_x.ipynb", [title, code()]))
    assert [p for p in a.problems if "Do this" in p] == [
        "cell 0: title cell without a 'Do this' tip (```{admonition} Do this / :class: tip, "
        "3-5 lines)"
    ]


def test_the_tip_is_looked_for_in_the_title_cell_only(make_notebook):
    later = "Intro.\n\n```{admonition} Do this\n:class: tip\nx\n```\n"
    nb = make_notebook("01_x.ipynb", [later, "# 01 · X", code()])
    problems = audit_notebooks.audit_notebook(nb).problems
    assert any("cell 1: title cell without a 'Do this' tip" in p for p in problems)


def code(source="x = 1", outputs=("1\n",), **kw):
    return {"source": source, "outputs": list(outputs), **kw}


def test_verdict_words_are_bench_verdicts():
    # the four, and the retired word while stored outputs of the three-verdict book remain
    assert audit_notebooks.VERDICT_WORDS == (*bench.VERDICTS, "NO CLEAR DIFFERENCE")


def test_a_clean_notebook_has_no_problems(make_notebook):
    a = audit(
        make_notebook,
        [
            code(),
            code("assert True\nprint(2)", ["2\n"]),
            code("plot()", [PNG], tags=["nbval-ignore-output"], metadata=FIGURE_META),
            code("y = 2", []),
            code("z", ["3\n"]),
            code("w", ["4\n"]),
        ],
    )
    assert a.problems == []
    assert (a.code, a.with_output, a.compared, a.ignored, a.asserts, a.figures) == (
        6,
        5,
        4,
        1,
        1,
        1,
    )
    assert a.share == pytest.approx(0.8)


def test_execution_order_and_unexecuted_cells(make_notebook):
    a = audit(make_notebook, [code(count=1), code(count=3), code(count=None)])
    assert a.problems == [
        "cell 2: execution_count 3, expected 2 (run top to bottom)",
        "cell 3: never executed",
    ]


def test_skipped_cells_are_not_counted(make_notebook):
    a = audit(make_notebook, [code(count=1), code(count=None, tags=["nbval-skip"]), code(count=2)])
    assert a.problems == [] and a.skipped == 1 and a.code == 3


def test_stored_errors_unless_expected(make_notebook):
    err = {"output_type": "error", "ename": "ValueError", "evalue": "bad\nmore", "traceback": []}
    a = audit(make_notebook, [code(outputs=[err]), code(outputs=[err], tags=["raises-exception"])])
    assert a.problems == ["cell 1: stored error ValueError: bad"]


def test_share_of_outputs_compared(make_notebook):
    cells = [code(), code(tags=["nbval-ignore-output"]), code("# NBVAL_IGNORE_OUTPUT\nx")]
    a = audit(make_notebook, cells)
    assert (a.compared, a.with_output) == (1, 3)
    assert "1 of 3 outputs compared (33%), needs 80%" in a.problems
    assert audit(make_notebook, cells, min_compared=0.3).problems[-1].startswith("cell 3:")


def test_comment_markers_are_problems(make_notebook):
    a = audit(
        make_notebook,
        [
            code("# NBVAL_IGNORE_OUTPUT\nx"),
            code("  ## NBVAL_SKIP\ny"),
            code("x  # see NBVAL_IGNORE_OUTPUT docs", ["1\n"]),
        ],
    )
    assert [p.split(":")[0] for p in a.problems if "marker" in p] == ["cell 1", "cell 2"]
    assert "'# NBVAL_IGNORE_OUTPUT' shows on the page" in a.problems[0]


@pytest.mark.parametrize(
    "meta, missing",
    [
        ({}, "mystnb.figure.caption, mystnb.image.alt"),
        ({"mystnb": {"figure": {"caption": "c"}}}, "mystnb.image.alt"),
        ({"mystnb": {"figure": {"caption": " "}, "image": {"alt": "a"}}}, "mystnb.figure.caption"),
        ({"mystnb": "nonsense"}, "mystnb.figure.caption, mystnb.image.alt"),
    ],
)
def test_figures_need_caption_and_alt(make_notebook, meta, missing):
    a = audit(make_notebook, [code("plot()", [PNG], metadata=meta)] + [code()] * 4)
    assert a.problems == [f"cell 1: figure without {missing}"]


def test_long_verdict_lines(make_notebook):
    short = "FASTER 1.22x [1.15-1.31] conv+BN fusion (cpu, 2 threads)\n"
    long = "SLOWER 0.50x [0.40-0.60] " + "x" * 80 + " (cpu, 2 threads)\n"
    a = audit(
        make_notebook,
        [
            code(outputs=[short]),
            code(outputs=[long]),
            code(outputs=["FASTER is a word, " + "y" * 100 + "\n"]),
        ],
    )
    assert len(a.problems) == 1
    assert a.problems[0].startswith("cell 2: verdict line of 122 characters (keep it under 100)")


def test_machine_paths(make_notebook):
    a = audit(make_notebook, [code(outputs=["saved to /tmp/abc/x.pt\n"])])
    assert a.problems == ["cell 1: machine path in output near '/tmp/'"]


def test_timing_calls_need_a_device(make_notebook):
    """Issue 20, defect 1: a timing without device= would be labelled by the machine."""
    a = audit(
        make_notebook,
        [
            code("c = bench.compare('a', f, g, check=True)"),
            code("m = bench.measure(f, device='cpu')\nk = bench.compare_many('x', cands)"),
            code("%time x = 1\nbench.measure(f, device=x.device)\nbench.compare(**kw)"),
            code("t = bench.fmt_time(1.0)\nother.compare('a', f, g)"),
        ],
    )
    assert a.problems == [
        "cell 1: bench.compare (line 1) without device=: pass where the timed work runs "
        "('cpu', 'cuda' or a tensor's .device)",
        "cell 2: bench.compare_many (line 2) without device=: pass where the timed work runs "
        "('cpu', 'cuda' or a tensor's .device)",
    ]


def test_timing_calls_without_device_skips_what_is_not_python():
    assert code_cells.timing_calls_without_device("def (:\n  bench.compare(1)") == []
    assert code_cells.timing_calls_without_device("!ls\nbench.measure(f)") == [
        "bench.measure (line 2)"
    ]


def test_cuda_branch_needs_colab_gpu_runtime(make_notebook):
    cells = [code("if torch.cuda.is_available():\n    x = 1", ["\n"])]
    a = audit(make_notebook, cells)
    assert a.problems == [
        "has a CUDA branch but no Colab GPU-runtime metadata (make colab adds it)"
    ]


def test_unreadable_notebook(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{")
    assert audit_notebooks.audit_notebook(bad).problems[0].startswith("not a readable notebook")


def test_main_reports_unlisted_notebooks_and_exit_codes(tmp_book, make_notebook, capsys):
    root = tmp_book({"01_a": complete_chapter()})
    assert audit_notebooks.main([], root=root) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "audit: 1 notebooks, 2 code cells, 2/2 outputs compared "
        "(100%; each notebook needs 80%), 0 asserts, 0 figures, "
        "0 problems"
    )
    make_notebook(root / "book" / "99_draft.ipynb", ["# 99 · Draft"])
    assert audit_notebooks.main([], root=root) == 1
    assert (
        "PROBLEM 99_draft.ipynb: under book/ but not listed in _toc.yml" in capsys.readouterr().out
    )
    assert audit_notebooks.main([str(root / "book" / "missing.ipynb")], root=root) == 1


SETUP = "import torch\n\nfrom tricks_helpers import bench, env, notebook\n"


def import_problems(make_notebook, *sources):
    a = audit(make_notebook, [code(s, [], count=i + 1) for i, s in enumerate(sources)])
    return [p for p in a.problems if "one-import-form" in p]


def test_one_import_form_passes_the_set_up_import(make_notebook):
    multi = "from tricks_helpers import (\n    bench,\n    env,\n)\n"
    assert import_problems(make_notebook, SETUP, "x = 1") == []
    assert import_problems(make_notebook, multi, "print('tricks_helpers.ddp_train')") == []


@pytest.mark.parametrize(
    "source, what",
    [
        ("from tricks_helpers.notebook import show_error", "'from tricks_helpers.notebook"),
        ("from tricks_helpers.storage.writing import write", "'from tricks_helpers.storage."),
        ("import tricks_helpers.fusion", "'import tricks_helpers.fusion'"),
        ("import tricks_helpers", "'import tricks_helpers'"),
        ("from tricks_helpers import bench, quantization as qz", "alias in"),
        ("from tricks_helpers import (\n    bench,\n    fusion as fu,\n)", "alias in"),
    ],
)
def test_one_import_form_fails_other_forms(make_notebook, source, what):
    problems = import_problems(make_notebook, source)
    assert len(problems) == 1
    assert what in problems[0] and problems[0].startswith("cell 1: ")


def test_one_import_form_fails_a_second_import_in_a_later_cell(make_notebook):
    problems = import_problems(make_notebook, SETUP, "x = 1", "from tricks_helpers import storage")
    assert problems == [
        "cell 3: second import of the package (first in cell 1) breaks one-import-form: "
        "`from tricks_helpers import a, b`, once, in the set-up cell"
    ]


def test_one_import_form_reads_code_not_strings(make_notebook):
    """A script handed to a subprocess imports in its own process: not this kernel's import."""
    script = 'WRITER = """\nfrom tricks_helpers import storage\nstorage.write(1, 2)\n"""\n'
    indented = "if True:\n    from tricks_helpers.notebook import show_error\n"
    assert import_problems(make_notebook, SETUP, script) == []
    problems = import_problems(make_notebook, SETUP, indented)
    assert len(problems) == 1 and "'from tricks_helpers.notebook import show_error'" in problems[0]


@pytest.mark.parametrize("rounds", [*range(1, 70), 151])
def test_coverage_percent_agrees_with_bench(rounds):
    assert audit_notebooks.CONFIDENCE == bench.CONFIDENCE
    assert audit_notebooks.coverage_percent(rounds) == bench.coverage_percent(rounds)


DETAILS = "  baseline ~1.47 ms, trick ~1.21 ms; {rounds} rounds{calls}, {label}% interval\n"


def details(rounds, label, calls=""):
    line = "FASTER 1.22x [1.15-1.31] fusion (cpu, 2 threads)\n"
    return line + DETAILS.format(rounds=rounds, calls=calls, label=label)


def test_coverage_label_above_what_the_rounds_give_fails(make_notebook):
    """Issue 19: 5 rounds give a 93.75% interval; a line calling it 95% is a problem."""
    a = audit(
        make_notebook,
        [
            code(outputs=[details(5, 93)]),
            code(outputs=[details(5, 95)]),
            code(outputs=[details(3, 80, " x 10 calls")]),
            code(outputs=[details(6, 96) + details(31, 97, " x 5 calls")]),
            code(outputs=["  baseline ~1 ms, trick ~1 ms; 3 rounds\n"]),  # no label: no claim
        ],
    )
    assert a.problems == [
        "cell 2: interval labelled 95% but 5 rounds give 93% (rule coverage)",
        "cell 3: interval labelled 80% but 3 rounds give 75% (rule coverage)",
    ]


def comparison(rounds):
    times = tuple(1e-3 for _ in range(rounds))
    return bench.Comparison(
        "c", bench.Measurement(times, "cpu"), bench.Measurement(times, "cpu"), (1.2,) * rounds, 2
    )


def test_coverage_of_table_rows_and_unbacked_table_labels(make_notebook):
    table = bench.table({"five": comparison(5), "six rounds": comparison(6)}) + "\n"
    assert "  5     93%  FASTER" in table
    old = (
        "what       baseline       trick  speed-up [95% interval]  verdict\n"
        "fusion       ~1 ms     ~0.8 ms  1.22x [1.15-1.31]        FASTER\n"
    )
    overstated = table.replace("  5     93%  FASTER", "  5     95%  FASTER")
    a = audit(
        make_notebook, [code(outputs=[table]), code(outputs=[old]), code(outputs=[overstated])]
    )
    assert a.problems == [
        "cell 2: table labels its intervals 95% but prints no round counts to back it "
        "(rule coverage)",
        "cell 3: interval labelled 95% but 5 rounds give 93% (rule coverage)",
    ]


MEASURED_TABLE_PROBLEM = (
    "a measured value in a width-padded f-string "
    "(measured-table: measured rows go through bench.measured_table)"
)


@pytest.mark.parametrize(
    "source, lines",
    [
        # issue 28: measured values aligned by hand
        ('print(f"{bench.fmt_time(t):>12}")', [1]),
        ('row = " ".join(f"{bench.fmt_time(m[w]):>12}" for w in ws)', [1]),
        ('print(f"{name:<10} {fmt_measured(x)}  {n:>6} rows")', [1]),  # padding after a value
        ('x = 1\nprint(f"loss ~{loss:>8.3g}")', [2]),  # a ~ number, padded
        ('print(f"{str(bench.Measured(v)):{width}}")', [1]),  # a width from a variable
        ('print(\n    f"{a} ~{b:.2f} "\n    f"{c:<9}"\n)', [2]),  # concatenated parts are one
        # clean: a padded label before the values, precision without width, a table
        ('print(f"{name:<18} {bench.fmt_measured(pct)}% of the ceiling")', []),
        ('print(f"~{x:.3g} and {bench.fmt_time(t)}; {n:,} rows, {s:+.2%}")', []),
        ('print(f"{n:>8} {m:,}")', []),
        ("print(bench.measured_table(('what', 't'), {'a': [bench.Measured(1.0)]}))", []),
        ("%time x = 1\ns = f'{x:>8}'", []),
        ("def (:\n  f'{bench.fmt_time(t):>9}'", []),  # not Python: not checked
    ],
)
def test_measured_values_aligned_by_hand(source, lines):
    assert code_cells.padded_measured_values(source) == [f"line {n}" for n in lines]


def test_a_planted_hand_aligned_measured_row_fails_and_a_table_passes(make_notebook):
    planted = 'for n in (1, 2):\n    print(f"{n:>8} {bench.fmt_time(t[n]):>12}")'
    clean = "print(bench.measured_table(('threads', 'time'), rows))"
    a = audit(make_notebook, [code(planted), code(clean)])
    assert a.problems == [f"cell 1, line 2: {MEASURED_TABLE_PROBLEM}"]


def test_no_stored_chapter_aligns_a_measured_value_by_hand():
    from scripts.book.find_notebooks import ROOT, chapter_notebooks

    hits = []
    for path in chapter_notebooks(ROOT):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                src = stored_text(cell["source"])
                hits += [
                    f"{path.name} cell {i}, {w}" for w in code_cells.padded_measured_values(src)
                ]
    assert hits == []
