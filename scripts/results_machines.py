"""The results page's "Across machines" part: every recorded machine side by side (issue 22).

Reads the results files under ``results/`` (:mod:`tricks_helpers.machine_records`; the book's
reference run first) and renders one column per machine, headed by its facts and measured
limits, one line per comparison with each machine's verdict, and the list of comparisons whose
verdict differs between machines. Used by ``scripts/results_page.py``.
"""

from __future__ import annotations

from pathlib import Path

from tricks_helpers import machine_records
from tricks_helpers.bench import fmt_measured, fmt_ratio


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


def _machinecell_text(f: dict) -> str:
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
    out[-1] += " | ".join(cell_text(_machinecell_text(f)) for f in files) + " |"
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
    return out + [""]
