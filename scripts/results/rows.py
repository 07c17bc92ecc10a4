"""The results page's rows: one per measured comparison, from records or printed lines.

Records first: :func:`apply_records` makes each chapter's rows from the reference results
file's records (``tricks_helpers.bench.records``), and then :func:`read_chapter` reads only a
chapter's title and card (``rows=False``). Only without one (the fallback) does it read the
rows back from the notebook's stored outputs.

Read back, a chapter gives its machine card (torch, device, CPU, threads, GPU, bf16, the date
it was executed and the commit) and its rows. Two forms are read, both printed by
:mod:`tricks_helpers.bench`:

- a verdict line (``bench.VERDICT_LINE_RE``) and the indented details line under it,
  ``FASTER 1.22x [1.15-1.31] conv+BN fusion, batch 1 (cpu, 2 threads)`` then
  ``  baseline ~1.47 ms, trick ~1.21 ms; 31 rounds x 5 calls``;
- the rows of a ``bench.table`` (header ``what  baseline  trick  speed-up [interval]  rounds
  covers  verdict``; tables printed before the coverage columns are read too), whose device
  and threads are the chapter card's.

Each row's ``covers`` is the exact coverage of its interval computed from its round count
(``bench.coverage_percent``, rounded down), ``?`` where the output printed no round count.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from scripts.book.notebook_cells import stored_text
from scripts.results.retired_verdict import RETIRED_VERDICT, redecide
from tricks_helpers.bench import (
    UNDECIDED,
    VERDICT_LINE_RE,
    VERDICTS,
    coverage_percent,
    fmt_ratio,
    fmt_time,
)

_RATIO = r"\d+(?:\.\d+)?"
_TIME = r"~\S+ (?:ns|us|ms|s)"
DETAILS_RE = re.compile(
    rf"^  baseline (?P<baseline>{_TIME}), trick (?P<trick>{_TIME}); (?P<rounds>~?\d+) rounds"
    r"(?: x (?P<calls>\d+) calls)?"
)
TABLE_HEAD_RE = re.compile(
    r"^what\s+baseline\s+trick\s+speed-up \[(?:95% )?interval\](?:\s+rounds\s+covers)?\s+verdict$"
)
TABLE_ROW_RE = re.compile(
    rf"^(?P<label>\S.*?)\s+(?P<baseline>{_TIME})\s+(?P<trick>{_TIME})\s+"
    rf"(?P<ratio>{_RATIO})x \[(?P<lo>{_RATIO})-(?P<hi>{_RATIO})\]\s+"
    rf"(?:(?P<rounds>~?\d+)\s+~?\d+%\s+)?(?P<verdict>{'|'.join((*VERDICTS, RETIRED_VERDICT))})$"
)
CARD_RE = re.compile(
    r"^  (?P<key>torch|device|cpu|threads|gpu|bf16|executed|commit|warning) +(?P<value>.+)$"
)


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
    retired: bool = False  # printed with the three-verdict book's word, re-decided when read

    @property
    def covers(self) -> str:
        """The interval's coverage from its round count (``93%``), ``?`` when none was printed;
        ``~99%`` where rounds were added while UNDECIDED (``~9`` rounds)."""
        n = self.rounds.split(" x ")[0]
        mark = "~" if n.startswith("~") else ""
        return f"{mark}{coverage_percent(int(n.lstrip('~')))}%" if n else "?"

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


def _output_lines(cell) -> list[str]:
    lines = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            lines += stored_text(out.get("text")).splitlines()
        elif out.get("output_type") in ("execute_result", "display_data"):
            lines += stored_text(out.get("data", {}).get("text/plain")).splitlines()
    return lines


def _half_step(printed: str) -> float:
    """Half the last printed digit's step (``fmt_ratio``: 1.23 -> 0.005, 12.3 -> 0.05)."""
    decimals = len(printed.partition(".")[2])
    return 0.5 * 10.0**-decimals


def _read_verdict(word: str, lo: str, hi: str, retired: bool) -> str:
    """A printed verdict as the page reads it. The retired word of the three-verdict book is
    re-decided from its printed interval widened by the rounding of its ends, so a SAME is read
    only where the unrounded interval surely was inside the thresholds."""
    if not retired:
        return word
    return redecide(RETIRED_VERDICT, float(lo) - _half_step(lo), float(hi) + _half_step(hi))


def parse_lines(lines: list[str], card: dict[str, str]) -> list[Row]:
    """The measured verdicts in one cell's output lines (verdict lines and table rows)."""
    rows: list[Row] = []
    in_table = False
    default_where = f"{card.get('device', '?')}, {card.get('threads', '?')} threads"
    for i, line in enumerate(lines):
        line = line.rstrip()
        retired = line.startswith(RETIRED_VERDICT + " ")  # a stored output of the 3-verdict book
        if retired:
            line = UNDECIDED + line[len(RETIRED_VERDICT) :]  # read as a line, re-decided below
        m = VERDICT_LINE_RE.match(line)
        if m:
            in_table = False
            row = Row(
                label=m["label"],
                verdict=_read_verdict(m["verdict"], m["lo"], m["hi"], retired),
                retired=retired,
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
                    verdict=_read_verdict(
                        t["verdict"], t["lo"], t["hi"], t["verdict"] == RETIRED_VERDICT
                    ),
                    retired=t["verdict"] == RETIRED_VERDICT,
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


def read_chapter(path: Path, rows: bool = True) -> Chapter:
    """Read a notebook's title, environment card and (``rows``) measured verdicts.

    ``rows=False`` reads the title and card only: where a reference results file holds the
    chapter's records (:func:`apply_records`), the printed lines are not parsed for rows.

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
            m = re.search(r"^# (.+)$", stored_text(cell.get("source")), flags=re.M)
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
        for row in parse_lines(lines, chapter.card) if rows else ():
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
