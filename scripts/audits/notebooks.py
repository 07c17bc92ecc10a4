"""Audit the stored state of the book's notebooks, without running them (``make audit``).

    python -m scripts.audits.notebooks [NOTEBOOK ...] [--min-compared 0.8]

Default: every chapter of ``_toc.yml``. It prints one row per notebook (code cells, cells
with output, outputs compared by nbval, ignored, skipped, asserts, figures) and fails (exit 1)
on what makes a stored book untrustworthy or a page unreadable:

- a code cell never executed, or executed out of order (run top to bottom: ``make execute``);
- a stored error output in a cell not tagged ``raises-exception``;
- less than ``--min-compared`` (default 80%) of the cells with output compared by nbval;
- an ``# NBVAL_*`` comment marker (it shows on the page: use the cell tag instead, e.g.
  ``nbval-ignore-output``; ``scripts/release/convert_markers.py`` converts them);
- a figure (an image output) without a caption and alt text in its cell's metadata:
  ``"mystnb": {"figure": {"caption": ..., "name": "fig-..."}, "image": {"alt": ...}}``;
- a verdict line (``FASTER 1.22x [1.15-1.31] ...``) of 100 characters or more: the verdict
  must stay visible on the page;
- an interval labelled with more coverage than its round count gives (rule ``coverage``):
  the details line ``  baseline ...; 5 rounds, 93% interval`` and a ``bench.table`` row
  (``rounds`` and ``covers`` columns) may print at most the exact coverage of the median's
  order-statistics interval for that many rounds, rounded down (75% at 3 rounds, 93% at 5);
  a table header labelling all its intervals (``speed-up [95% interval]``) without printing
  round counts fails too;
- a path of the machine that ran it in an output (``/tmp/...``, ``site-packages/``...);
- a notebook under ``book/`` that ``_toc.yml`` does not list;
- a helper import in any other form than the one (rule ``one-import-form``): a chapter
  imports helpers only as ``from tricks_helpers import a, b, c``, once, in its set-up cell;
  no ``from tricks_helpers.x import y``, no ``import tricks_helpers[.x]``, no alias
  (``quantization as qz``), no second import of the package in a later cell.
- a ``bench.measure``/``compare``/``compare_many`` call without ``device=``: the device of a
  timing comes from what is timed, never from what the machine has (issue 20);
- a measured value aligned by hand (rule ``measured-table``): in an f-string, a measured value
  (a ``fmt_time``/``fmt_measured``/``Measured`` call, or a field right after a ``~``) padded
  to a width (``{bench.fmt_time(t):>12}``, ``~{x:>8.3g}``, ``{x:{width}}``), or followed by a
  padded field whose place then moves with its digits; measured rows go through
  ``bench.measured_table``, whose fixed-width columns the sanitize file masks;
- a chapter with a CUDA branch without Colab's GPU-runtime metadata (``make colab`` adds it);
- a title cell (the first markdown cell opening with ``# ``) without the reader's first-screen
  takeaway (rule ``do-this``): a ``{admonition} Do this`` fence with ``:class: tip``.
- a compared cell whose branch on the device prints differently on its two sides (rule
  ``one-output-per-device``): each side prints the same number of lines, each one
  ``[hardware] `` line (masked), or the cell is tagged ``nbval-ignore-output``, so that the
  stored CPU output also matches a GPU run.
- advice the run does not decide (``scripts/audits/claims.py``, issue 29): no claims table in
  the stored outputs (rule ``claims-table``); a tip without this run's glued clause, or a claim
  the stored run printed ``NOT HELD HERE`` that the clause does not name (rule
  ``claims-in-tip``); a printed point above its roof, ``~N% of`` a limit, ceiling, roof,
  bandwidth or peak with N > 100 (rule ``roof-upper-bound``); a code cell with more than
  ``MAX_CLAIM_LINES`` (45) lines of claim declarations, or a claims-table cell longer than that
  (rule ``claims-cell-size``: a claim is declared beside its evidence).
- one machine, several limits (``scripts/audits/limits.py``, issue 39): chapters printing
  different limits, or limits other than their machine's recorded ones (rule
  ``limits-one-set``); a rate a chapter recorded above its machine's limit (rule
  ``limits-above-rate``). Run over every chapter only (not when notebooks are named).
- the recipe and the evidence out of place (``scripts/audits/recipes.py``, issue 30): a cell
  tagged ``recipe`` that uses the book's helpers (rule ``recipe-plain``), no recipe cell or a
  first one past the first fifth of the page (rule ``recipe-first``), a cell that times
  something with its code shown (rule ``evidence-folded``: tag it ``hide-input``).

Only the standard library and this repository's scripts are used.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scripts.audits.claims import claims_problems, claims_size_problems, roof_problems
from scripts.audits.code_cells import (
    MEASURED_TABLE,
    helper_imports,
    import_problems,
    padded_measured_values,
    timing_calls_without_device,
)
from scripts.audits.device_branches import (
    device_branch_problems,
    device_names,
    device_text_problems,
)
from scripts.audits.limits import limits_problems
from scripts.audits.recipes import folding_problems, recipe_problems
from scripts.book.find_notebooks import ROOT, notebooks_from_args, unlisted_notebooks
from scripts.book.notebook_cells import output_text, stored_text
from scripts.release.colab_runtime import has_gpu_branch, has_gpu_runtime
from scripts.results.retired_verdict import RETIRED_VERDICT
from tricks_helpers.bench import VERDICTS

MIN_COMPARED = 0.80
MAX_VERDICT_LINE = 99  # characters: "< 100"
# the four verdicts, and the word retired by issue 39 while stored outputs still print it
VERDICT_WORDS = (*VERDICTS, RETIRED_VERDICT)
_VERDICT_START = re.compile(rf"^(?:{'|'.join(VERDICT_WORDS)}) \d")
_MARKER = re.compile(r"^\s*#+\s*((?:NBVAL|PYTEST_VALIDATE)_[A-Z_]+)")
_MACHINE_PATH = re.compile(
    r"(/tmp/|/home/|/root/|/work/|/usr/local/lib/python|site-packages/|C:\\\\Users)"
)
CONFIDENCE = 0.95  # the target of bench.median_interval (the test checks they agree)
_DETAILS_COVERAGE = re.compile(
    r"^  baseline .*?; (?P<rounds>~?\d+) rounds(?: x \d+ calls)?(?:, (?P<label>~?\d+)% interval)?"
)
_TABLE_HEAD = re.compile(
    r"^what\s+baseline\s+trick\s+speed-up \[(?:(?P<label>\d+)% )?interval\]"
    r"(?P<rounds>\s+rounds\s+covers)?\s+verdict$"
)
_TABLE_ROW = re.compile(
    rf"\]\s+(?P<rounds>~?\d+)\s+(?P<label>~?\d+)%\s+(?:{'|'.join(VERDICT_WORDS)})$"
)
_IGNORE_TAGS = {"nbval-ignore-output", "pytest-validate-ignore-output"}
_SKIP_TAGS = {"nbval-skip"}
_RAISES_TAGS = {"raises-exception", "nbval-raises-exception"}
_COMMENT_TAGS = {  # nbval's comment markers, as the tag that means the same
    "NBVAL_IGNORE_OUTPUT": {"nbval-ignore-output"},
    "PYTEST_VALIDATE_IGNORE_OUTPUT": {"nbval-ignore-output"},
    "NBVAL_SKIP": {"nbval-skip"},
    "NBVAL_RAISES_EXCEPTION": {"raises-exception"},
}


@dataclass
class Audit:
    """What the audit found in one notebook."""

    name: str
    code: int = 0
    with_output: int = 0
    compared: int = 0
    ignored: int = 0
    skipped: int = 0
    asserts: int = 0
    figures: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        """Share of the cells with output that nbval compares (1.0 when none has output)."""
        return self.compared / self.with_output if self.with_output else 1.0


def _figure_problem(meta: dict) -> str:
    """What a figure cell's metadata lacks for a caption and alt text ('' when complete)."""
    mystnb = meta.get("mystnb") if isinstance(meta.get("mystnb"), dict) else {}
    figure = mystnb.get("figure") if isinstance(mystnb.get("figure"), dict) else {}
    image = mystnb.get("image") if isinstance(mystnb.get("image"), dict) else {}
    missing = [
        what
        for what, value in (
            ("mystnb.figure.caption", figure.get("caption")),
            ("mystnb.image.alt", image.get("alt")),
        )
        if not (isinstance(value, str) and value.strip())
    ]
    return ", ".join(missing)


def coverage_percent(rounds: int, confidence: float = CONFIDENCE) -> int:
    """The most coverage, in whole percent, an interval of ``rounds`` per-round ratios has.

    The interval is ``[x_(k), x_(n+1-k)]`` with the largest ``k <= n // 2`` whose coverage
    ``1 - 2 P(Binomial(n, 1/2) < k)`` reaches ``confidence`` (``k = 1``, the full range, when
    none does); the exact coverage is rounded down. An independent re-computation of
    ``tricks_helpers.bench.coverage_percent`` from the standard library.
    """
    n, total = rounds, 2**rounds
    k = 1
    while k < n // 2 and total - 2 * sum(math.comb(n, i) for i in range(k + 1)) >= (
        confidence * total
    ):
        k += 1
    return (100 * (total - 2 * sum(math.comb(n, i) for i in range(k)))) // total


def coverage_problems(cell: int, lines: list[str]) -> list[str]:
    """Intervals in one output labelled with more coverage than their printed rounds give."""
    problems = []
    in_table = False
    for line in lines:
        line = line.rstrip()
        head = _TABLE_HEAD.match(line)
        if head:
            in_table = bool(head["rounds"])
            if head["label"] and not head["rounds"]:
                problems.append(
                    f"cell {cell}: table labels its intervals {head['label']}% but prints no "
                    "round counts to back it (rule coverage)"
                )
            continue
        m = _DETAILS_COVERAGE.match(line) or (_TABLE_ROW.search(line) if in_table else None)
        rounds = int(m["rounds"].lstrip("~")) if m else 0  # ~: rounds added while UNDECIDED
        if m and m["label"] and rounds > 0:
            most = coverage_percent(rounds)
            if int(m["label"].lstrip("~")) > most:
                problems.append(
                    f"cell {cell}: interval labelled {m['label']}% but {m['rounds']} rounds "
                    f"give {most}% (rule coverage)"
                )
        if not _TABLE_ROW.search(line):
            in_table = False
    return problems


_DO_THIS = re.compile(r"^```\{admonition\} Do this\n:class: tip\n", flags=re.M)


def do_this_problem(cells: list[dict]) -> str:
    """Rule ``do-this``: the title cell must hold a "Do this" tip (empty string when it does)."""
    for i, cell in enumerate(cells):
        src = stored_text(cell.get("source"))
        if cell.get("cell_type") == "markdown" and src.startswith("# "):
            if _DO_THIS.search(src):
                return ""
            return (
                f"cell {i}: title cell without a 'Do this' tip "
                "(```{admonition} Do this / :class: tip, 3-5 lines)"
            )
    return ""


def audit_notebook(
    path: Path, min_compared: float = MIN_COMPARED, chapter_rules: bool = True
) -> Audit:
    """Audit one stored notebook (see the module docstring for the rules).

    ``chapter_rules=False`` leaves out what only a whole chapter has (its claims table and the
    tip's clause, its recipe, folded timings): for tests of the other rules on scratch cells.
    """
    result = Audit(path.name)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        result.problems.append(f"not a readable notebook ({exc})")
        return result
    tip = do_this_problem(cells)
    if tip:
        result.problems.append(tip)
    expected = 1
    first_import: int | None = None
    device_vars: set[str] = set()
    derived: set[str] = set()  # names computed from the device (same-text-every-device)
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        src = stored_text(cell.get("source"))
        if not src.strip():
            continue
        result.problems += import_problems(i, src, first_import)
        if first_import is None and helper_imports(src):
            first_import = i
        meta = cell.get("metadata", {})
        tags = set(meta.get("tags", []))
        result.code += 1
        result.asserts += len(re.findall(r"^\s*assert\b", src, flags=re.M))
        for call in timing_calls_without_device(src):
            result.problems.append(
                f"cell {i}: {call} without device=: pass where the timed work runs "
                "('cpu', 'cuda' or a tensor's .device)"
            )
        for where in padded_measured_values(src):
            result.problems.append(
                f"cell {i}, {where}: a measured value in a width-padded f-string ({MEASURED_TABLE})"
            )
        for line in src.splitlines():
            m = _MARKER.match(line)
            if m:
                result.problems.append(
                    f"cell {i}: comment marker '# {m.group(1)}' shows on the "
                    "page: use the cell tag (scripts/release/convert_markers.py)"
                )
            if line.strip().startswith("#"):  # what nbval honours, until converted to tags
                tags |= _COMMENT_TAGS.get(line.strip().lstrip("#").strip(), set())
        device_vars |= device_names(src)  # rules one-output-per-device, same-text-every-device
        compared = not tags & (_SKIP_TAGS | _IGNORE_TAGS)
        result.problems += device_text_problems(i, src, device_vars, derived, compared=compared)
        if compared:
            result.problems += device_branch_problems(i, src, device_vars)
        if tags & _SKIP_TAGS:
            result.skipped += 1
            continue
        count = cell.get("execution_count")
        if count is None:
            result.problems.append(f"cell {i}: never executed")
        elif count != expected:
            result.problems.append(
                f"cell {i}: execution_count {count}, expected {expected} (run top to bottom)"
            )
        expected = (count or expected) + 1
        outs = cell.get("outputs", [])
        if outs:
            result.with_output += 1
            if tags & _IGNORE_TAGS:
                result.ignored += 1
            else:
                result.compared += 1
        for out in outs:
            if out.get("output_type") == "error" and not tags & _RAISES_TAGS:
                evalue = (out.get("evalue") or "").strip().splitlines()
                result.problems.append(
                    f"cell {i}: stored error {out.get('ename')}: {evalue[0][:80] if evalue else ''}"
                )
            if any(k.startswith("image/") for k in out.get("data", {})):
                result.figures += 1
                missing = _figure_problem(meta)
                if missing:
                    result.problems.append(f"cell {i}: figure without {missing}")
            text = output_text(out)
            result.problems += coverage_problems(i, text.splitlines())
            for line in text.splitlines():
                if _VERDICT_START.match(line) and len(line) > MAX_VERDICT_LINE:
                    result.problems.append(
                        f"cell {i}: verdict line of {len(line)} characters "
                        f"(keep it under 100): {line[:60]}..."
                    )
            hit = _MACHINE_PATH.search(text)
            if hit:
                result.problems.append(f"cell {i}: machine path in output near {hit.group(0)!r}")
    result.problems += roof_problems(cells) + claims_size_problems(cells)
    if chapter_rules:
        result.problems += claims_problems(cells) + recipe_problems(cells)
        result.problems += folding_problems(cells)
    if has_gpu_branch(nb) and not has_gpu_runtime(nb):
        result.problems.append(
            "has a CUDA branch but no Colab GPU-runtime metadata (make colab adds it)"
        )
    if result.share < min_compared:
        result.problems.append(
            f"{result.compared} of {result.with_output} outputs compared "
            f"({result.share:.0%}), needs {min_compared:.0%}"
        )
    return result


def report(
    audits: list[Audit], unlisted: list[Path], min_compared: float, machine: list[str] = ()
) -> tuple[str, int]:
    """The printed report and its number of problems (``machine``: the limits rules' hits)."""
    width = max([len(a.name) for a in audits] + [8])
    lines = [
        f"{'notebook':<{width}} {'code':>4} {'out':>4} {'cmp':>4} {'ign':>4} {'skip':>4} "
        f"{'share':>5} {'assert':>6} {'fig':>4}"
    ]
    problems = 0
    for a in audits:
        lines.append(
            f"{a.name:<{width}} {a.code:4} {a.with_output:4} {a.compared:4} "
            f"{a.ignored:4} {a.skipped:4} {a.share:5.0%} {a.asserts:6} {a.figures:4}"
        )
        lines += [f"    PROBLEM {p}" for p in a.problems]
        problems += len(a.problems)
    for path in unlisted:
        lines.append(f"PROBLEM {path.name}: under book/ but not listed in _toc.yml")
        problems += 1
    lines += [f"PROBLEM {line}" for line in machine]
    problems += len(machine)
    compared = sum(a.compared for a in audits)
    with_output = sum(a.with_output for a in audits)
    share = compared / with_output if with_output else 1.0
    lines.append(
        f"audit: {len(audits)} notebooks, {sum(a.code for a in audits)} code cells, "
        f"{compared}/{with_output} outputs compared ({share:.0%}; each notebook needs "
        f"{min_compared:.0%}), {sum(a.asserts for a in audits)} asserts, "
        f"{sum(a.figures for a in audits)} figures, {problems} problems"
    )
    return "\n".join(lines), problems


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks (default: every chapter)")
    parser.add_argument(
        "--min-compared",
        type=float,
        default=MIN_COMPARED,
        help="least share of outputs nbval must compare, per notebook",
    )
    args = parser.parse_args(argv)
    try:
        paths = notebooks_from_args(args.notebooks, root)
    except (FileNotFoundError, ValueError) as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return 1
    audits = [audit_notebook(p, args.min_compared) for p in paths]
    unlisted = [] if args.notebooks else unlisted_notebooks(root)
    machine = [] if args.notebooks else limits_problems(paths, root / "results")
    text, problems = report(audits, unlisted, args.min_compared, machine)
    print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
