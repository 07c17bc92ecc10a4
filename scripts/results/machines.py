"""The results files every page reads, and the results page's across-machines charts (issue 22).

Reads the results files under ``results/`` (``scripts/book/machine_records.py``; the book's
reference run first), names each machine by what decides the tricks (:func:`column_names`),
says its facts, limits and chapters in words (the tables are ``results.overview``'s), and
draws a chart per chapter with one marker per machine
(``book/results_machines_<chapter>.svg``: each comparison a row, each machine a colour and
marker shape, hollow where its verdict is UNDECIDED; the chapter's title is drawn
inside the figure). Like the page's main chart, each is checked by a digest of its data
written into the SVG's metadata. Used by ``scripts/results/page.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from scripts.book import machine_records
from scripts.results.check import check_file
from scripts.results.kinds import kind_name, unique_records
from scripts.results.schema import check_files
from tricks_helpers import charts
from tricks_helpers._io import atomic_target
from tricks_helpers.bench import NOISE_THRESHOLD, fmt_measured

CHART_GLOB = "results_machines_*.svg"
_DIGEST_RE = re.compile(r"results-machines-sha256 ([0-9a-f]{64})")


#: What starts markup in Markdown/MyST (emphasis, code, links, roles, math, tables, HTML) when
#: it stands in a line of text: these are backslash-escaped (``<``, ``>``, ``&``: written as
#: entities). ``_`` between two letters or digits starts nothing (``channels_last``) and is
#: left as it is.
_MARKUP = re.compile(r"[\\`*\[\]{}|$<>&]|(?<![^\W_])_|_(?![^\W_])")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
#: Every control character (a newline that would start a ```` ```{directive} ```` line).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def cell_text(text: object) -> str:
    """``text`` as text on the MyST page, whatever it holds: it can start no markup.

    Safe inside a table cell, a list item or a figure caption: ``|`` and every other mark
    Markdown, MyST or HTML would read there (`````, ``*``, ``_``, ``[``, ``{``, ``$``, ``<``,
    ``&`` ...) is escaped, and a newline or other control character becomes a space, so
    nothing can start a block (a ```` ```{literalinclude} ```` fence), a role, math or a tag
    (``<script>``). The built page shows the characters as they were.
    """
    text = _CONTROL.sub(" ", str(text))
    return _MARKUP.sub(lambda m: _ENTITIES.get(m[0]) or "\\" + m[0], text)


def machine_files(root: Path) -> list[dict]:
    """Every results file under ``root/results``, the reference (source "book") first.

    Each passes the check a contributed file passes before anything reads it
    (``scripts.results.check.check_file``: not a link, regular, bounded, strict JSON, the
    schema, its name), then all together (``schema.check_files``).

    Raises:
        ValueError: on a file that is not a regular file, not JSON, or that the schema
            refuses; on a file named apart from its machine id, or a second ``book`` file.
    """
    named = {}
    for path in sorted((root / "results").glob("*.json")):
        named[path.name] = check_file(path)  # the contributed-file check, every file
    check_files(named)
    return sorted(named.values(), key=lambda d: d["source"] != "book")


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


def _machine_facts_text(f: dict) -> str:
    m = f["machine"]
    arch = m.get("arch")  # absent in files written on x86 Linux before it was recorded
    x86 = arch is None or arch in machine_records.X86_ARCHS
    none = "no AVX2" if x86 else "none of " + "/".join(machine_records.ARM_ISA_FLAGS)
    isa = (f"{arch}: " if arch else "") + (", ".join(m["isa"]) or none)
    cap = "; capped " + ", ".join(f"{k}={v}" for k, v in m["capped"].items()) if m["capped"] else ""
    return (
        f"{m['cpu']} ({isa}{cap}; {m['threads']} threads; GPU: {m['gpu']}; torch {m['torch']}); "
        + limits_text(f.get("limits"))
    )


def chapters_text(f: dict) -> str:
    """How many chapters ran, and each failed one with its first error (a ``-`` below it
    means the comparison did not run there)."""
    chapters = f.get("chapters", {})
    failed = {k: v for k, v in chapters.items() if v.get("status") == "failed"}
    text = f"{len(chapters) - len(failed)} of {len(chapters)} ran"
    return text + "".join(
        f"; {k} FAILED: {v.get('error') or 'no error text'}" for k, v in failed.items()
    )


def column_names(files: list[dict]) -> list[str]:
    """One name per results file, by what decides the tricks (``kinds.kind_name``), ``(book)``
    after the reference run's; a second file of one kind gets ``#2``, and so on."""
    out: list[str] = []
    for f in files:
        name = kind_name(f) + (" (book)" if f["source"] == "book" else "")
        n = sum(o == name or o.startswith(name + " #") for o in out)
        out.append(name + (f" #{n + 1}" if n else ""))
    return out


def chart_name(chapter: str) -> str:
    """The file name of one chapter's across-machines chart."""
    return f"results_machines_{chapter}.svg"


def chapter_points(files: list[dict]) -> dict[str, dict[str, dict[str, list]]]:
    """What each chapter's chart plots: ``{chapter: {row label: {machine: [ratio, lo, hi,
    verdict]}}}``, chapters and rows in first-recorded order (the n-th repeat of a label in a
    chapter is labelled ``label (n+1)``)."""
    out: dict[str, dict[str, dict[str, list]]] = {}
    for name, f in zip(column_names(files), files):
        records = unique_records(f["records"])  # a comparison recorded under two labels: once
        for (chapter, label, n), r in machine_records.record_keys(records).items():
            row = out.setdefault(chapter, {}).setdefault(label + (f" ({n + 1})" if n else ""), {})
            row[name] = [r["ratio"], r["lo"], r["hi"], r["verdict"]]
    return out


def chart_digest_of(title: str, points: dict[str, dict[str, list]], names: list[str]) -> str:
    """SHA-256 of one chapter chart's data (stable across matplotlib versions)."""
    payload = {"title": title, "machines": names, "points": points, "threshold": NOISE_THRESHOLD}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def machines_chart(title: str, points: dict[str, dict[str, list]], names: list[str]) -> Any:
    """One chapter's chart: a row per comparison, one marker (with its interval) per machine.

    Drawn by :func:`tricks_helpers.charts.speedup_chart` with one series per machine (a colour
    and marker shape each, hollow where the verdict is UNDECIDED), the same axis,
    threshold lines and boxed title as every speed-up chart of the book.

    Returns:
        The matplotlib figure, its title drawn inside the axes (shortened with "…" to fit).
    """
    return charts.speedup_chart(
        {title: {label: {n: tuple(p) for n, p in row.items()} for label, row in points.items()}},
        series=names,
        xlabel="speed-up, log scale; hollow: no clear difference",
    )


def chart_digest(path: Path) -> str | None:
    """The data digest written into an across-machines chart, or None if absent."""
    if not path.is_file():
        return None
    m = _DIGEST_RE.search(path.read_text(encoding="utf-8", errors="replace"))
    return m.group(1) if m else None


def expected_charts(files: list[dict], titles: dict[str, str]) -> dict[str, tuple]:
    """``{file name: (title, points, names)}`` of the charts the page shows (none for one file)."""
    if len(files) < 2:
        return {}
    names = column_names(files)
    return {
        chart_name(ch): (titles.get(ch, ch), points, names)
        for ch, points in chapter_points(files).items()
    }


def stale_charts(files: list[dict], titles: dict[str, str], book: Path) -> list[str]:
    """Why the across-machines charts in ``book`` do not match the results files."""
    want = expected_charts(files, titles)
    problems = [
        f"{name} is missing or plots other data"
        for name, data in want.items()
        if chart_digest(book / name) != chart_digest_of(*data)
    ]
    problems += [
        f"{p.name} is left over" for p in sorted(book.glob(CHART_GLOB)) if p.name not in want
    ]
    return problems


def write_charts(files: list[dict], titles: dict[str, str], book: Path) -> None:
    """Draw every across-machines chart into ``book`` (atomically) and remove left-over ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    want = expected_charts(files, titles)
    for name, data in want.items():
        with (
            atomic_target(book / name) as tmp,
            plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none", "font.size": 9}),
        ):
            fig = machines_chart(*data)
            fig.savefig(
                tmp,
                format="svg",
                bbox_inches="tight",
                metadata={
                    "Date": None,
                    "Title": f"{data[0]}: speed-ups by machine",
                    "Description": f"results-machines-sha256 {chart_digest_of(*data)}",
                },
            )
            plt.close(fig)
    for path in book.glob(CHART_GLOB):
        if path.name not in want:
            path.unlink()


def chart_figures(files: list[dict], titles: dict[str, str] | None = None) -> list[str]:
    """Each chapter's across-machines chart as a figure (none for fewer than two files)."""
    want = expected_charts(files, titles or {})
    if not want:
        return []
    out = ["## Speed-ups by machine, by chapter", ""]
    for name, (title, points, _) in expected_charts(files, titles or {}).items():
        out += [
            f"```{{figure}} {name}",
            f":alt: {_CONTROL.sub(' ', _plain(title))}: one row per comparison, one marker with "
            "its interval per machine (a colour and shape each, hollow where the verdict is no "
            "clear difference), on a logarithmic speed-up axis with the noise threshold dashed.",
            "",
            f"{cell_text(_plain(title))}: {len(points)} comparisons on {len(files)} machines.",
            "```",
            "",
        ]
    return out


def _plain(title: str) -> str:
    return re.sub(r"[`*]", "", title)
