"""Generate the book's results page and its chart from the stored notebook outputs.

    python -m scripts.results.page            write book/results.md and book/results_speedups.svg
    python -m scripts.results.page --check    exit 1 if either is stale

Records first: where ``results/`` holds a reference results file (source ``"book"``, written by
``make execute``, see ``scripts/book/machine_records.py``), the page is keyed by kind of
machine (``results.overview``, issue 40): it opens with which tricks pay off on which kind of
machine, says how to add a machine, then shows each comparison once with each machine's verdict
and interval (and its *why* partner), every claim per machine, the machines' facts and a chart
per chapter; a survey's chapter whose code changed since its commit is marked stale. Without a
reference file the page falls back to reading the printed lines back (``results_rows``); with
one, the printed lines are read for each chapter's title and card only. Every results file is
checked against the results schema (``results_schema``) before anything reads it, and every
string from one is written as text (``results_machines.cell_text``): a contributed file is
data, never markup.

The page ends with the compatibility table, chapter by torch release, from the records of
``make compat`` (``results/compat/``, ``results_compat``), each checked against its schema first.

Nothing on the page is typed: every row is a measured verdict a chapter recorded or printed,
beside the machine card of that chapter (torch, device, CPU, threads, GPU, bf16, the date it
was executed and the commit); a comparison printed both ways is kept once. The side-by-side
section and its charts are ``results_machines``'s. The chart shows every row's speed-up with its
interval, grouped by chapter, on a log scale with 1.0 and the noise threshold marked. The
page is compared as text by ``--check``; the chart is checked by its data (a digest of the
plotted rows written into the SVG's metadata), not by its bytes, so a matplotlib or font
difference does not make it stale while a changed measurement does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from scripts.book.find_notebooks import ROOT, chapter_notebooks
from scripts.results.compat import compat_section
from scripts.results.machines import (
    cell_text,
    chart_figures,
    machine_files,
    stale_charts,
    write_charts,
)
from scripts.results.overview import (
    machine_details,
    render_claims_by_machine,
    render_comparisons,
    render_overview,
)
from scripts.results.rows import Chapter, apply_records, read_chapter
from tricks_helpers import charts
from tricks_helpers._io import atomic_target
from tricks_helpers.bench import (
    NOISE_THRESHOLD,
    VERDICTS,
    fmt_ratio,
)

PAGE_NAME = "results.md"
CHART_NAME = "results_speedups.svg"

DIGEST_RE = re.compile(r"results-data-sha256 ([0-9a-f]{64})")


# the largest speed-up bound a verdict table prints as 0.00 (issue 41: a loaded machine)
PRINTED_ZERO = 0.005


def chart_data(chapters: list[Chapter]) -> list[dict]:
    """What the chart plots, in plotting order (also what its digest covers)."""
    return [
        {
            "chapter": ch.title,
            "label": r.label,
            "verdict": r.verdict,
            "ratio": r.ratio,
            "lo": r.lo,
            "hi": r.hi,
        }
        for ch in chapters
        for r in ch.rows
    ]


def data_digest(chapters: list[Chapter]) -> str:
    """SHA-256 of the chart's data and threshold (stable across matplotlib versions)."""
    payload = json.dumps(
        {"threshold": NOISE_THRESHOLD, "rows": chart_data(chapters)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _plain_title(title: str) -> str:
    """A chapter's short title for the chart: no markdown marks, the part before its colon.

    ``03 · Data loading: storage formats, ...`` becomes ``03 · Data loading``; the chart
    shortens further, with "…", whatever still runs past its axes.
    """
    return re.sub(r"[`*]", "", title).split(": ", 1)[0].strip()


def render_chart(chapters: list[Chapter], path: Path) -> None:
    """Draw every row's speed-up and interval, grouped by chapter, into an SVG at ``path``.

    The drawing is :func:`tricks_helpers.charts.speedup_chart`, the chart the chapters use.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {
        # a bound the table printed as 0.00 lies below 0.005: drawn there (the chart needs > 0)
        _plain_title(ch.title): [
            (r.label, r.ratio, r.lo or PRINTED_ZERO, r.hi, r.verdict) for r in ch.rows
        ]
        for ch in chapters
        if ch.rows
    }
    with plt.rc_context({"svg.hashsalt": "results-page", "svg.fonttype": "none", "font.size": 9}):
        fig = charts.speedup_chart(groups, threshold=NOISE_THRESHOLD)
        fig.savefig(
            path,
            format="svg",
            metadata={
                "Date": None,
                "Title": "Speed-ups measured in the chapters",
                "Description": f"results-data-sha256 {data_digest(chapters)}",
            },
        )
        plt.close(fig)


def _card_line(ch: Chapter) -> str:
    c = ch.card
    text = (
        f"Measured with torch {c.get('torch', '?')} on {c.get('device', '?')} "
        f"({c.get('cpu', '?')}, {c.get('threads', '?')} threads; GPU: {c.get('gpu', 'none')}; "
        f"bf16: {c.get('bf16', '?')})"
    )
    if "executed" in c or "commit" in c:
        text += f", executed {c.get('executed', '?')} at commit {c.get('commit', '?')}"
    return text + f". Chapter: {{doc}}`{ch.notebook}`."


def render(
    chapters: list[Chapter],
    machines: list[dict] | None = None,
    compat: list[str] | None = None,
    root: Path = ROOT,
) -> str:
    """The results page as MyST markdown (``machines``: results files, the reference first;
    ``compat``: the compatibility section's lines, ``results_compat.compat_section``; ``root``:
    the checkout, for the surveys' stale chapters).

    With results files it opens with which tricks pay off on which kind of machine
    (``results.overview``), then how to add a machine, the chart, every comparison once per
    machine, every claim per machine, the machines' facts and the per-chapter charts; without,
    the chapters' printed verdicts, one table per chapter."""
    rows = [r for ch in chapters for r in ch.rows]
    machines = machines or []
    titles = _titles(chapters)
    out = ["# Results: which tricks pay off on which kind of machine", ""]
    out += render_overview(machines, root, titles)
    out += [
        "## How these numbers were made",
        "",
        "```{note}",
        "This page is generated by `scripts/results/page.py` from the stored outputs of the",
        "chapters and the machine records in `results/`; do not edit it by hand. A comparison is",
        "the median of the per-round speed-ups (baseline time / trick time) with its interval,",
        "and the verdict the chapter's code decided from that interval against the book's one",
        f"noise threshold ({NOISE_THRESHOLD:g}x). Verdicts are measurements: shown, not compared",
        "by CI, and they can differ on another machine or under load. What CI compares is each",
        "chapter's invariants (counts, bytes, FLOPs, equalities). An interval of n rounds covers",
        "the true median with probability 1 - 2^(1-n): 75% at 3 rounds, 93% at 5, 95% from 6.",
        "```",
        "",
    ]
    counts = {v: sum(r.verdict == v for r in rows) for v in VERDICTS}
    with_rows = sum(bool(ch.rows) for ch in chapters)
    out += [
        f"{len(rows)} measured verdicts from {with_rows} of {len(chapters)} chapters: "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + ".",
        "",
    ]
    if rows:
        out += [
            f"```{{figure}} {CHART_NAME}",
            ":name: fig-results-speedups",
            ":alt: One marker per measured trick with a horizontal bar for its interval, "
            "grouped by chapter, on a logarithmic speed-up axis with a solid line at 1 "
            "(no change) and dashed lines at the noise threshold and its inverse.",
            "",
            "Every speed-up of the book's run with its interval, by chapter (log scale). Right of "
            f"the dashed line at {NOISE_THRESHOLD:g}x with its whole interval: FASTER; left of "
            f"1/{NOISE_THRESHOLD:g}x: SLOWER; with its whole interval between the two: SAME; "
            "otherwise (it straddles a dashed line): UNDECIDED.",
            "```",
            "",
        ]
    if machines:
        cards = {ch.notebook: _card_line(ch) for ch in chapters if ch.card}
        out += render_comparisons(machines, root, titles, cards)
        out += render_claims_by_machine(machines, root)
        out += machine_details(machines)
        out += chart_figures(machines, titles)
        return "\n".join(out + (compat or [])).rstrip() + "\n"
    for ch in chapters:
        out += [f"## {ch.title}", ""]
        if ch.card:
            out += [_card_line(ch), ""]
        if not ch.rows:
            out += ["This chapter prints no measured verdicts.", ""]
            continue
        with_why = any(r.why for r in ch.rows)  # a chapter whose comparisons name no why: no column
        out += [
            "| what | baseline | trick | speed-up [interval] | covers | verdict | where |"
            + (" why |" if with_why else ""),
            "| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if with_why else ""),
        ]
        for r in ch.rows:
            lo = fmt_ratio(r.lo) if r.lo > 0 else "0.00"  # a bound the table printed as 0.00
            speedup = f"{fmt_ratio(r.ratio)}x [{lo}-{fmt_ratio(r.hi)}]"
            cells = [
                cell_text(r.label),
                cell_text(r.baseline or "?"),
                cell_text(r.trick or "?"),
                speedup,  # made here from numbers: brackets that must stay as they are
                r.covers,
                cell_text(r.verdict),
                cell_text(r.where),
            ] + ([cell_text(_why_text(r))] if with_why else [])
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out += compat or []
    return "\n".join(out).rstrip() + "\n"


def _why_text(r) -> str:
    """A row's why partner as the chapter printed it. Whether it explains the verdict is decided
    on the chapter's page from the direction the partner predicts (``bench.explanation``); a
    record names no direction (a gain, no change or a cost), so the page stamps none."""
    return r.why or ""


def chart_digest(path: Path) -> str | None:
    """The data digest written into a chart SVG, or None if absent."""
    if not path.is_file():
        return None
    m = DIGEST_RE.search(path.read_text(encoding="utf-8", errors="replace"))
    return m.group(1) if m else None


def _titles(chapters: list[Chapter]) -> dict[str, str]:
    return {ch.notebook: _plain_title(ch.title) for ch in chapters}


def stale(
    chapters: list[Chapter],
    book: Path,
    machines: list[dict] | None = None,
    compat: list[str] | None = None,
    root: Path = ROOT,
) -> list[str]:
    """Why the committed page or charts do not match the stored outputs (empty: up to date)."""
    problems = stale_charts(machines or [], _titles(chapters), book)
    page = book / PAGE_NAME
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    if text != render(chapters, machines, compat, root):
        problems.append(f"{PAGE_NAME} differs from the stored outputs")
    chart = book / CHART_NAME
    if any(ch.rows for ch in chapters):
        if chart_digest(chart) != data_digest(chapters):
            problems.append(f"{CHART_NAME} is missing or plots other data")
    elif chart.exists():
        problems.append(f"{CHART_NAME} exists but no chapter prints a measured verdict")
    return problems


def write(
    chapters: list[Chapter],
    book: Path,
    machines: list[dict] | None = None,
    compat: list[str] | None = None,
    root: Path = ROOT,
) -> None:
    """Write the page and (re)draw the charts, atomically."""
    write_charts(machines or [], _titles(chapters), book)
    page = book / PAGE_NAME
    text = render(chapters, machines, compat, root)
    with atomic_target(page) as tmp:  # unique temporaries, then a rename
        tmp.write_text(text, encoding="utf-8")
    chart = book / CHART_NAME
    if any(ch.rows for ch in chapters):
        with atomic_target(chart) as tmp:
            render_chart(chapters, tmp)
    elif chart.exists():
        chart.unlink()


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page or chart is stale")
    args = parser.parse_args(argv)
    try:
        machines = machine_files(root)  # each file checked against the results schema first
        compat = compat_section(root, chapter_notebooks(root))  # each record checked too
    except (TypeError, ValueError) as exc:
        print(f"results_page: {exc}; nothing written", file=sys.stderr)
        return 1
    if not (machines and machines[0]["source"] == "book"):
        machines = []  # no reference run: rows read from the printed lines (the fallback)
    chapters = [read_chapter(p, rows=not machines) for p in chapter_notebooks(root)]
    if machines:
        apply_records(chapters, machines[0])
    book = root / "book"
    if args.check:
        problems = stale(chapters, book, machines, compat, root)
        for problem in problems:
            print(f"results_page: {problem}; run `python -m scripts.results.page`", file=sys.stderr)
        if not problems:
            print("results_page: book/results.md and its chart are up to date")
        return 1 if problems else 0
    write(chapters, book, machines, compat, root)
    print(
        f"results_page: wrote book/{PAGE_NAME}"
        + (f" and book/{CHART_NAME}" if any(ch.rows for ch in chapters) else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
