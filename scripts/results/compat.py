"""The results page's compatibility table: chapter by torch release, from the compat records.

Reads ``results/compat/torch-<release>.json`` (``compat_records.read_all``: each record checked
against ``compat_schema`` first) and renders one row per chapter of the book (reading order),
one column per recorded torch release (numeric order, headed ``torch <version>`` with its
torchao), each cell in words: ``ran``, ``ran, N section(s) skipped: <section> (<reason>)``,
``failed at code cell N (<ErrorType>)`` (the message is listed under the table), or ``not run``
where that release's record has no entry for the chapter. A cell whose chapter's code changed
since its run (``compat_outcome.code_digest`` of the notebook now differs from the record's) is
marked ``(stale)``: the table never presents a run of older code as a run of this one. Under
the table: which machine, Python, date and commit made each column, and that outputs were not
compared. Every string from a record is written as text (``results_machines.cell_text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scripts.compat import outcome as compat_outcome
from scripts.compat.records import FOLDER, read_all
from scripts.results.machines import cell_text

__all__ = ["current_digests", "cell", "render_compat", "compat_section"]

STALE = " (stale)"


def current_digests(notebooks: list[Path]) -> dict[str, str]:
    """``{stem: compat_outcome.code_digest}`` of the notebooks as they are now."""
    import nbformat

    return {
        Path(p).stem: compat_outcome.code_digest(nbformat.read(p, as_version=4)) for p in notebooks
    }


def cell(item: Mapping[str, Any] | None, digest: str | None) -> str:
    """One table cell in words (already escaped); ``(stale)`` where ``digest`` differs from
    the run's, ``not run`` where there is no entry."""
    if item is None:
        return "not run"
    if item["status"] == "failed" and item["failed_cell"]:
        kind = item["error"].split(":", 1)[0]
        text = f"failed at code cell {item['failed_cell']} ({cell_text(kind)})"
    elif item["status"] == "failed":
        text = "failed (see below)"
    else:
        skipped = compat_outcome.skipped_text(item["skipped"])
        text = "ran, " + cell_text(skipped) if skipped else "ran"
    return text + (STALE if item["code_sha256"] != digest else "")


def _column(record: Mapping[str, Any]) -> str:
    return cell_text(f"torch {record['torch']} (torchao {record['torchao']})")


def _row(record: Mapping[str, Any]) -> str:
    requirement = record["torchao_requirement"]
    if requirement == "torchao":  # compat_env: a release without a row gets torchao unbounded
        return "unbounded (TORCHAO\\_FOR\\_TORCH has no row for this release)"
    return f"from the row {cell_text(requirement)}"


def render_compat(records: list[Mapping[str, Any]], digests: Mapping[str, str]) -> list[str]:
    """The section's markdown lines (none without records).

    Args:
        records: compat records, in column order.
        digests: ``{chapter stem: code digest now}``, in row order (the book's chapters).
    """
    if not records:
        return []
    out = [
        "## Compatibility: chapter by torch release",
        "",
        "Whether each chapter's code runs to its end under other torch releases, each with the "
        "torchao the Colab set-up cell installs beside it (`make compat TORCH=...`). A cell "
        "says *ran*, which sections the chapter skipped and why, or the code cell that failed "
        "(code cells counted from 1, the hidden Colab set-up cell first: the number Jupyter "
        "shows beside it after *Run all*). *(stale)*: the chapter's code changed since that "
        "run; *not run*: that release's record has no run of the chapter.",
        "",
        "| chapter | " + " | ".join(_column(r) for r in records) + " |",
        "| --- " * (len(records) + 1) + "|",
    ]
    for stem, digest in digests.items():
        cells = [cell(r["chapters"].get(stem), digest) for r in records]
        out.append(f"| {cell_text(stem)} | " + " | ".join(cells) + " |")
    failures = [
        f"- torch {cell_text(r['torch'])}, {cell_text(stem)}: "
        + cell_text(compat_outcome.outcome_text(item))
        for r in records
        for stem, item in r["chapters"].items()
        if item["status"] == "failed" and stem in digests
    ]
    if failures:
        out += ["", "Failures, first line of each error:", "", *failures]
    out += ["", "Where and when each column ran:", ""]
    for r in records:
        dates = sorted({e["date"] for e in r["chapters"].values()})
        commits = sorted({e["commit"] for e in r["chapters"].values()})
        out.append(
            f"- torch {cell_text(r['torch'])}: machine {cell_text(r['machine'])}, Python "
            f"{cell_text(r['python'])}, torchao {cell_text(r['torchao'])} {_row(r)}; run "
            f"{cell_text(', '.join(dates))} at "
            f"commit {cell_text(', '.join(commits))}"
        )
    out += [
        "",
        "Outputs were not compared: a cell says only whether the chapter's code ran, not "
        "whether its printed results match the stored ones (the book's own torch release is "
        "compared output by output by `make test`).",
        "",
    ]
    return out


def compat_section(root: Path, notebooks: list[Path]) -> list[str]:
    """The section for the repository at ``root``: its records against ``notebooks`` now.

    Raises:
        ValueError, TypeError: on a record the schema refuses (``compat_records.read_record``).
    """
    return render_compat(read_all(Path(root) / FOLDER), current_digests(notebooks))
