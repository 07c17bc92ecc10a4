"""Generate the book's results page and its chart from the stored notebook outputs.

    python scripts/results_page.py            write book/results.md and book/results_speedups.svg
    python scripts/results_page.py --check    exit 1 if either is stale

Records first: where ``results/`` holds a reference results file (source ``"book"``, written by
``make execute``, see ``tricks_helpers.machine_records``), every row comes from its records
(``tricks_helpers.bench.records``) and the page gains a *why* column (the invariant partner);
with more than one machine's file, an "Across machines" section shows them side by side (one
column per machine with its facts) and lists the comparisons whose verdict differs. Without a
reference file the page falls back to reading the printed lines back, as described next.

Nothing on the page is typed: every row is a measured verdict a chapter printed, read back
from the notebook's stored outputs, beside the machine card of that chapter (torch, device,
CPU, threads, GPU, bf16, the date it was executed and the commit). Two forms are read, both
printed by :mod:`tricks_helpers.bench`:

- a verdict line (``bench.VERDICT_LINE_RE``) and the indented details line under it,
  ``FASTER 1.22x [1.15-1.31] conv+BN fusion, batch 1 (cpu, 2 threads)`` then
  ``  baseline ~1.47 ms, trick ~1.21 ms; 31 rounds x 5 calls``;
- the rows of a ``bench.table`` (header ``what  baseline  trick  speed-up [interval]  rounds
  covers  verdict``; tables printed before the coverage columns are read too), whose device
  and threads are the chapter card's.

Each row's ``covers`` is the exact coverage of its interval computed from its round count
(``bench.coverage_percent``, rounded down), ``?`` where the output printed no round count.

A comparison printed both ways is kept once. The chart shows every row's speed-up with its
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
from dataclasses import dataclass, field
from pathlib import Path

from find_notebooks import ROOT, chapter_notebooks
from tricks_helpers import charts, machine_records
from tricks_helpers.bench import (
    NOISE_THRESHOLD,
    VERDICT_LINE_RE,
    VERDICTS,
    coverage_percent,
    fmt_measured,
    fmt_ratio,
    fmt_time,
)

PAGE_NAME = "results.md"
CHART_NAME = "results_speedups.svg"

_RATIO = r"\d+(?:\.\d+)?"
_TIME = r"~\S+ (?:ns|us|ms|s)"
DETAILS_RE = re.compile(
    rf"^  baseline (?P<baseline>{_TIME}), trick (?P<trick>{_TIME}); (?P<rounds>\d+) rounds"
    r"(?: x (?P<calls>\d+) calls)?"
)
TABLE_HEAD_RE = re.compile(
    r"^what\s+baseline\s+trick\s+speed-up \[(?:95% )?interval\](?:\s+rounds\s+covers)?\s+verdict$"
)
TABLE_ROW_RE = re.compile(
    rf"^(?P<label>\S.*?)\s+(?P<baseline>{_TIME})\s+(?P<trick>{_TIME})\s+"
    rf"(?P<ratio>{_RATIO})x \[(?P<lo>{_RATIO})-(?P<hi>{_RATIO})\]\s+"
    rf"(?:(?P<rounds>\d+)\s+\d+%\s+)?(?P<verdict>{'|'.join(VERDICTS)})$"
)
CARD_RE = re.compile(
    r"^  (?P<key>torch|device|cpu|threads|gpu|bf16|executed|commit|warning) +(?P<value>.+)$"
)
DIGEST_RE = re.compile(r"results-data-sha256 ([0-9a-f]{64})")


@dataclass
class Row:
    """One measured verdict."""

    label: str
    verdict: str
    ratio: float
    lo: float
    hi: float
    baseline: str = ""
    trick: str = ""
    rounds: str = ""
    where: str = ""
    why: str | None = None  # None: read from printed lines (no records), so no why column

    @property
    def covers(self) -> str:
        """The interval's coverage from its round count (``93%``), ``?`` when none was printed."""
        n = self.rounds.split(" x ")[0]
        return f"{coverage_percent(int(n))}%" if n else "?"

    def key(self) -> tuple:
        """What identifies one comparison, whichever way it was printed."""
        return (self.ratio, self.lo, self.hi, self.baseline, self.trick)


@dataclass
class Chapter:
    """What one notebook's stored outputs say."""

    notebook: str
    title: str
    card: dict[str, str] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _output_lines(cell) -> list[str]:
    lines = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            lines += _text(out.get("text")).splitlines()
        elif out.get("output_type") in ("execute_result", "display_data"):
            lines += _text(out.get("data", {}).get("text/plain")).splitlines()
    return lines


def parse_lines(lines: list[str], card: dict[str, str]) -> list[Row]:
    """The measured verdicts in one cell's output lines (verdict lines and table rows)."""
    rows: list[Row] = []
    in_table = False
    default_where = f"{card.get('device', '?')}, {card.get('threads', '?')} threads"
    for i, line in enumerate(lines):
        line = line.rstrip()
        m = VERDICT_LINE_RE.match(line)
        if m:
            in_table = False
            row = Row(
                label=m["label"],
                verdict=m["verdict"],
                ratio=float(m["ratio"]),
                lo=float(m["lo"]),
                hi=float(m["hi"]),
                where=f"{m['device']}, {m['threads']} threads",
            )
            d = DETAILS_RE.match(lines[i + 1]) if i + 1 < len(lines) else None
            if d:
                row.baseline, row.trick = d["baseline"], d["trick"]
                row.rounds = d["rounds"] + (f" x {d['calls']}" if d["calls"] else "")
            rows.append(row)
            continue
        if TABLE_HEAD_RE.match(line):
            in_table = True
            continue
        t = TABLE_ROW_RE.match(line) if in_table else None
        if t:
            rows.append(
                Row(
                    label=t["label"],
                    verdict=t["verdict"],
                    ratio=float(t["ratio"]),
                    lo=float(t["lo"]),
                    hi=float(t["hi"]),
                    baseline=t["baseline"],
                    trick=t["trick"],
                    rounds=t["rounds"] or "",
                    where=default_where,
                )
            )
        else:
            in_table = False
    return rows


def read_chapter(path: Path) -> Chapter:
    """Read a notebook's title, environment card and measured verdicts.

    Raises:
        ValueError: if the file is not a notebook or has no ``# `` title.
    """
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path.name}: not a readable notebook ({exc})") from exc
    title = None
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            m = re.search(r"^# (.+)$", _text(cell.get("source")), flags=re.M)
            if m:
                title = m.group(1).strip()
                break
    if title is None:
        raise ValueError(f"{path.name}: no '# Title' heading in any markdown cell")
    chapter = Chapter(notebook=path.stem, title=title)
    seen: set[tuple] = set()
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        lines = _output_lines(cell)
        if not chapter.card and "environment" in lines:
            for line in lines[lines.index("environment") + 1 :]:
                m = CARD_RE.match(line)
                if m:
                    chapter.card[m["key"]] = m["value"]
                elif not line.startswith("  "):
                    break
        for row in parse_lines(lines, chapter.card):
            if row.key() not in seen:
                seen.add(row.key())
                chapter.rows.append(row)
    return chapter


def row_of(rec: dict) -> Row:
    """A page row from one record (``tricks_helpers.bench.records``)."""
    calls = rec["calls_per_round"]
    return Row(
        label=rec["label"],
        verdict=rec["verdict"],
        ratio=float(fmt_ratio(rec["ratio"])),
        lo=float(fmt_ratio(rec["lo"])),
        hi=float(fmt_ratio(rec["hi"])),
        baseline=fmt_time(rec["baseline_s"]),
        trick=fmt_time(rec["trick_s"]),
        rounds=f"{rec['rounds']}" + (f" x {calls}" if calls > 1 else ""),
        where=f"{rec['device']}, {rec['threads']} threads",
        why=rec["why"],
    )


def machine_files(root: Path) -> list[dict]:
    """Every results file under ``root/results``, the reference (source "book") first."""
    files = [machine_records.read_results(p) for p in sorted((root / "results").glob("*.json"))]
    return sorted(files, key=lambda d: d["source"] != "book")


def apply_records(chapters: list[Chapter], reference: dict) -> None:
    """Replace each chapter's rows by the reference file's records (kept once each).

    A comparison recorded twice (its verdict line, then a ``bench.table`` row) is kept as
    first recorded, with the second record's ``why`` where the first has none.
    """
    for ch in chapters:
        seen: dict[tuple, Row] = {}
        ch.rows = []
        for rec in reference["records"]:
            key = (rec["baseline_s"], rec["trick_s"], rec["lo"], rec["hi"])
            if rec["chapter"] != ch.notebook:
                continue
            if key not in seen:
                seen[key] = row_of(rec)
                ch.rows.append(seen[key])
            elif rec["why"] and not seen[key].why:  # a table row naming the shown one's why
                seen[key].why = rec["why"]


def limits_text(limits: dict | None) -> str:
    """A results file's measured limits in words: copy GB/s, matmul GFLOP/s (int8: GOP/s)."""
    if not limits:
        return "limits not measured"
    rates = [
        f"{name} {fmt_measured(rate / 1e9)} {'GOP/s' if name == 'int8' else 'GFLOP/s'}"
        for name, rate in limits["matmul"].items()
    ]
    rates += [f"{name} not measured" for name in limits["skipped"]]
    return (
        f"limits on {limits['threads']} threads: copy {fmt_measured(limits['bandwidth'] / 1e9)} "
        f"GB/s; matmul {', '.join(rates) or 'none'}"
    )


def _machine_cell(f: dict) -> str:
    m = f["machine"]
    isa = ", ".join(m["isa"]) or "no AVX2"
    cap = "; capped " + ", ".join(f"{k}={v}" for k, v in m["capped"].items()) if m["capped"] else ""
    return (
        f"{m['cpu']} ({isa}{cap}; {m['threads']} threads; GPU: {m['gpu']}; torch {m['torch']}); "
        + limits_text(f.get("limits"))
    )


def render_machines(files: list[dict]) -> list[str]:
    """The side-by-side section: machine facts, each comparison's verdict per machine, differs."""
    keyed = [machine_records.record_keys(f["records"]) for f in files]
    names = [f["machine"]["id"] + (" (book)" if f["source"] == "book" else "") for f in files]
    out = ["## Across machines", "", "| | " + " | ".join(names) + " |"]
    out += ["| --- " * (len(files) + 1) + "|", "| machine | "]
    out[-1] += " | ".join(_cell(_machine_cell(f)) for f in files) + " |"
    differs = []
    keys = list(dict.fromkeys(k for ks in keyed for k in ks))
    for key in keys:
        cells = []
        for ks in keyed:
            r = ks.get(key)
            cells.append(f"{r['verdict']} {fmt_ratio(r['ratio'])}x" if r else "-")
        out.append(f"| {_cell(key[0] + ': ' + key[1])} | " + " | ".join(cells) + " |")
        verdicts = {ks[key]["verdict"] for ks in keyed if key in ks}
        if len(verdicts) > 1:
            pairs = "; ".join(f"{n} {c}" for n, c in zip(names, cells))
            differs.append(f"- {key[0]}: {key[1]}: {pairs}")
    out += ["", "### Differs between machines", ""]
    out += differs or ["No comparison's verdict differs between the recorded machines."]
    return out + [""]


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
        _plain_title(ch.title): [(r.label, r.ratio, r.lo, r.hi, r.verdict) for r in ch.rows]
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


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


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


def render(chapters: list[Chapter], machines: list[dict] | None = None) -> str:
    """The results page as MyST markdown (``machines``: results files, the reference first)."""
    rows = [r for ch in chapters for r in ch.rows]
    out = [
        "# Results: which tricks paid off where",
        "",
        "```{note}",
        "This page is generated by `scripts/results_page.py` from the stored outputs of the",
        "chapters; do not edit it by hand. Each row is one measured comparison: the median of the",
        "per-round speed-ups (baseline time / trick time) with its interval, and the verdict the",
        "chapter's code decided from that interval against the book's one noise threshold",
        f"({NOISE_THRESHOLD:g}x). `~` marks a measured value. Verdicts are measurements: they are",
        "shown, not compared by CI, and can differ on another machine or under load. What CI",
        "compares is each chapter's invariants (counts, bytes, FLOPs, equalities). *covers* is",
        "the chance that an interval holds the true median, exact for its number of rounds",
        "(rounded down): 75% at 3 rounds, 93% at 5, 95% or more from 6; `?`: not printed.",
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
            "Every measured speed-up with its interval, by chapter (log scale). Right of "
            f"the dashed line at {NOISE_THRESHOLD:g}x with its whole interval: FASTER; left of "
            f"1/{NOISE_THRESHOLD:g}x: SLOWER; otherwise NO CLEAR DIFFERENCE.",
            "```",
            "",
        ]
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
            speedup = f"{fmt_ratio(r.ratio)}x [{fmt_ratio(r.lo)}-{fmt_ratio(r.hi)}]"
            cells = (
                r.label,
                r.baseline or "?",
                r.trick or "?",
                speedup,
                r.covers,
                r.verdict,
                r.where,
            ) + ((r.why or "",) if with_why else ())
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    if machines and len(machines) > 1:
        out += render_machines(machines)
    return "\n".join(out).rstrip() + "\n"


def chart_digest(path: Path) -> str | None:
    """The data digest written into a chart SVG, or None if absent."""
    if not path.is_file():
        return None
    m = DIGEST_RE.search(path.read_text(encoding="utf-8", errors="replace"))
    return m.group(1) if m else None


def stale(chapters: list[Chapter], book: Path, machines: list[dict] | None = None) -> list[str]:
    """Why the committed page or chart do not match the stored outputs (empty: up to date)."""
    problems = []
    page = book / PAGE_NAME
    if (page.read_text(encoding="utf-8") if page.exists() else "") != render(chapters, machines):
        problems.append(f"{PAGE_NAME} differs from the stored outputs")
    chart = book / CHART_NAME
    if any(ch.rows for ch in chapters):
        if chart_digest(chart) != data_digest(chapters):
            problems.append(f"{CHART_NAME} is missing or plots other data")
    elif chart.exists():
        problems.append(f"{CHART_NAME} exists but no chapter prints a measured verdict")
    return problems


def write(chapters: list[Chapter], book: Path, machines: list[dict] | None = None) -> None:
    """Write the page and (re)draw the chart, atomically."""
    page = book / PAGE_NAME
    tmp = page.with_suffix(".md.tmp")
    tmp.write_text(render(chapters, machines), encoding="utf-8")
    tmp.replace(page)
    chart = book / CHART_NAME
    if any(ch.rows for ch in chapters):
        tmp = chart.with_name(chart.name + ".tmp")
        render_chart(chapters, tmp)
        tmp.replace(chart)
    elif chart.exists():
        chart.unlink()


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page or chart is stale")
    args = parser.parse_args(argv)
    chapters = [read_chapter(p) for p in chapter_notebooks(root)]
    machines = machine_files(root)
    if machines and machines[0]["source"] == "book":
        apply_records(chapters, machines[0])
    else:
        machines = []  # no reference run: rows read from the printed lines (the fallback)
    book = root / "book"
    if args.check:
        problems = stale(chapters, book, machines)
        for problem in problems:
            print(f"results_page: {problem}; run `python scripts/results_page.py`", file=sys.stderr)
        if not problems:
            print("results_page: book/results.md and its chart are up to date")
        return 1 if problems else 0
    write(chapters, book, machines)
    print(
        f"results_page: wrote book/{PAGE_NAME}"
        + (f" and book/{CHART_NAME}" if any(ch.rows for ch in chapters) else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
