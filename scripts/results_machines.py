"""The results page's "Across machines" part: every recorded machine side by side (issue 22).

Reads the results files under ``results/`` (:mod:`tricks_helpers.machine_records`; the book's
reference run first) and renders one column per machine, headed by its facts and measured
limits, one line per comparison with each machine's verdict, the list of comparisons whose
verdict differs between machines, and a chart per chapter with one marker per machine
(``book/results_machines_<chapter>.svg``: each comparison a row, each machine a colour and
marker shape, hollow where its verdict is NO CLEAR DIFFERENCE; the chapter's title is drawn
inside the figure). Like the page's main chart, each is checked by a digest of its data
written into the SVG's metadata. Used by ``scripts/results_page.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import machine_records
from tricks_helpers import charts
from tricks_helpers.bench import NO_CLEAR_DIFFERENCE, NOISE_THRESHOLD, fmt_measured, fmt_ratio

CHART_GLOB = "results_machines_*.svg"
#: one (colour, marker) per machine column, in column order (then repeated)
MACHINE_STYLES = (
    ("#1f77b4", "o"),
    ("#d95f02", "s"),
    ("#7570b3", "D"),
    ("#1b9e77", "^"),
    ("#e7298a", "v"),
    ("#666666", "P"),
)
_DIGEST_RE = re.compile(r"results-machines-sha256 ([0-9a-f]{64})")


def cell_text(text: str) -> str:
    """``text`` made safe inside a markdown table cell (pipes escaped)."""
    return text.replace("|", "\\|")


def machine_files(root: Path) -> list[dict]:
    """Every results file under ``root/results``, the reference (source "book") first."""
    files = [machine_records.read_results(p) for p in sorted((root / "results").glob("*.json"))]
    return sorted(files, key=lambda d: d["source"] != "book")


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
    isa = ", ".join(m["isa"]) or "no AVX2"
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
    """One name per results file: its machine id, ``(book)`` after the reference run's."""
    return [f["machine"]["id"] + (" (book)" if f["source"] == "book" else "") for f in files]


def chart_name(chapter: str) -> str:
    """The file name of one chapter's across-machines chart."""
    return f"results_machines_{chapter}.svg"


def chapter_points(files: list[dict]) -> dict[str, dict[str, dict[str, list]]]:
    """What each chapter's chart plots: ``{chapter: {row label: {machine: [ratio, lo, hi,
    verdict]}}}``, chapters and rows in first-recorded order (the n-th repeat of a label in a
    chapter is labelled ``label (n+1)``)."""
    out: dict[str, dict[str, dict[str, list]]] = {}
    for name, f in zip(column_names(files), files):
        for (chapter, label, n), r in machine_records.record_keys(f["records"]).items():
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

    Returns:
        The matplotlib figure, its title drawn inside the axes (shortened with "…" to fit).
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    fig, ax = plt.subplots(figsize=(7.5, 1.6 + 0.22 * len(names) * len(points)))
    step = 0.7 / max(len(names), 1)
    ticks, labels = [], []
    for i, (label, by_machine) in enumerate(points.items()):
        y = -(i + 1.0)
        for j, name in enumerate(names):
            if name not in by_machine:
                continue
            ratio, lo, hi, verdict = by_machine[name]
            colour, marker = MACHINE_STYLES[j % len(MACHINE_STYLES)]
            at = y + (j - (len(names) - 1) / 2) * step
            ax.errorbar(
                [ratio],
                [at],
                xerr=[[ratio - lo], [hi - ratio]],
                fmt=marker,
                color=colour,
                ecolor=colour,
                markerfacecolor="white" if verdict == NO_CLEAR_DIFFERENCE else colour,
                capsize=2,
                markersize=5,
            )
        ticks.append(y)
        labels.append(label if len(label) <= 48 else label[:47] + "…")
    values = [v for row in points.values() for p in row.values() for v in p[1:3]]
    lo = min(values + [1 / NOISE_THRESHOLD]) / 1.3
    hi = max(values + [NOISE_THRESHOLD]) * 1.3
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    steps = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
    ax.xaxis.set_major_locator(FixedLocator([t for t in steps if lo <= t <= hi]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:.2g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1.0, color="black", linewidth=1.0)
    for x in (NOISE_THRESHOLD, 1 / NOISE_THRESHOLD):
        ax.axvline(x, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(ticks, labels)
    ax.set_ylim(-(len(points) + 0.6), 0.0)
    ax.set_xlabel(
        f"speed-up, log scale; hollow: no clear difference; dashed: {NOISE_THRESHOLD:g}x "
        f"and 1/{NOISE_THRESHOLD:g}x"
    )
    ax.grid(axis="x", which="both", alpha=0.3)
    heading = ax.text(
        0.005,
        -0.2,
        title,
        transform=ax.get_yaxis_transform(),
        ha="left",
        va="center",
        fontweight="bold",
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
    )
    handles = [
        plt.Line2D([], [], color=c, marker=m, linestyle="", label=name)
        for name, (c, m) in zip(names, MACHINE_STYLES * (len(names) // len(MACHINE_STYLES) + 1))
    ]
    ax.legend(
        handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8, frameon=False
    )
    fig.tight_layout()
    charts.fit_inside(heading, ax)
    return fig


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
        tmp = book / (name + ".tmp")
        with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none", "font.size": 9}):
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
        tmp.replace(book / name)
    for path in book.glob(CHART_GLOB):
        if path.name not in want:
            path.unlink()


def render_machines(files: list[dict], titles: dict[str, str] | None = None) -> list[str]:
    """The side-by-side section: machine facts, each comparison's verdict per machine, differs,
    then each chapter's chart (``titles``: chapter stem -> its title)."""
    keyed = [machine_records.record_keys(f["records"]) for f in files]
    names = column_names(files)
    out = ["## Across machines", "", "| | " + " | ".join(names) + " |"]
    out += ["| --- " * (len(files) + 1) + "|", "| machine | "]
    out[-1] += " | ".join(cell_text(_machine_facts_text(f)) for f in files) + " |"
    out.append("| chapters | " + " | ".join(cell_text(chapters_text(f)) for f in files) + " |")
    differs = []
    keys = list(dict.fromkeys(k for ks in keyed for k in ks))
    for key in keys:
        cells = []
        for ks in keyed:
            r = ks.get(key)
            cells.append(f"{r['verdict']} {fmt_ratio(r['ratio'])}x" if r else "-")
        out.append(f"| {cell_text(key[0] + ': ' + key[1])} | " + " | ".join(cells) + " |")
        verdicts = {ks[key]["verdict"] for ks in keyed if key in ks}
        if len(verdicts) > 1:
            pairs = "; ".join(f"{n} {c}" for n, c in zip(names, cells))
            differs.append(f"- {key[0]}: {key[1]}: {pairs}")
    out += ["", "### Differs between machines", ""]
    out += differs or ["No comparison's verdict differs between the recorded machines."]
    out += ["", "### By chapter", ""]
    for name, (title, points, _) in expected_charts(files, titles or {}).items():
        out += [
            f"```{{figure}} {name}",
            f":alt: {_plain(title)}: one row per comparison, one marker with its interval per "
            "machine (a colour and shape each, hollow where the verdict is no clear difference), "
            "on a logarithmic speed-up axis with the noise threshold dashed.",
            "",
            f"{_plain(title)}: {len(points)} comparisons on {len(names)} machines.",
            "```",
            "",
        ]
    return out


def _plain(title: str) -> str:
    return re.sub(r"[`*]", "", title)
