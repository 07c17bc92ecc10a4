"""One chapter's compatibility outcome, read from its executed notebook (``make compat``).

A chapter either **ran** (every cell), ran with **sections skipped**, or **failed**:

- a section is skipped where a cell's output (a stream, or the ``text/plain`` of a result or
  display) has a line starting with exactly ``[skipped] `` (what
  ``tricks_helpers.notebook.skipped`` prints: ``[skipped] <section>: <reason>``, e.g. ``needs
  torchao>=0.18, this run has 0.16.0``); the text before the first ``": "`` is the section,
  the rest its reason (empty when there is no ``": "``);
- the failed cell is the **code cell number**: code cells counted from 1 in notebook order,
  markdown cells not counted, the hidden Colab set-up cell counted (it is code cell 1). After a
  top-to-bottom run this is the ``[N]`` Jupyter and Colab show beside the cell. A failure
  without an error output (a cell timeout, a dead kernel, a damaged records file) has no cell:
  ``None``, and the runner's error line says what happened.

:func:`code_digest` fingerprints the chapter's code (every code cell's source except the Colab
set-up cell, tagged ``colab-setup``, whose text changes with each release's re-stamp while it
installs nothing where the package is installed), so the compatibility table can mark a run of
older code as stale. :func:`entry` makes a chapter's record entry and :func:`line` its one line.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from scripts.book.notebook_cells import cell_tags, error_cell, output_text, stored_text
from scripts.release.colab_cell import TAG as COLAB_TAG
from tricks_helpers.notebook import SKIPPED_PREFIX as SKIP_PREFIX

__all__ = [
    "SKIP_PREFIX",
    "COLAB_TAG",
    "output_lines",
    "skipped_sections",
    "failed_cell",
    "code_digest",
    "entry",
    "skipped_text",
    "outcome_text",
    "line",
]

# SKIP_PREFIX (the exact prefix of a skipped section's line, what ``notebook.skipped`` prints)
# and COLAB_TAG (the Colab set-up cell's tag, left out of :func:`code_digest`) are imported
# from their one home above.
_SHOWN = ("stream", "execute_result", "display_data")  # outputs that print or show text


def _code_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def output_lines(cell: Any) -> list[str]:
    """The text lines a code cell printed or showed (streams, ``text/plain`` of results)."""
    outputs = [o for o in cell.get("outputs", []) if o.get("output_type") in _SHOWN]
    return [line for out in outputs for line in output_text(out).splitlines()]


def skipped_sections(nb: Any) -> list[dict[str, str]]:
    """Every ``[skipped] `` line of the executed notebook, in order, as ``{"section", "reason"}``.

    A section printed twice (e.g. by two cells) is listed once.
    """
    found: list[dict[str, str]] = []
    for cell in _code_cells(nb):
        for text in output_lines(cell):
            if not text.startswith(SKIP_PREFIX):
                continue
            section, _, reason = text[len(SKIP_PREFIX) :].strip().partition(": ")
            item = {"section": section.strip(), "reason": reason.strip()}
            if item["section"] and item not in found:
                found.append(item)
    return found


def failed_cell(nb: Any) -> tuple[int, str] | None:
    """``(code cell number, "ErrorType: first line of message")`` of the first error output.

    Returns:
        None when no code cell holds an error output.
    """
    found = error_cell(nb.cells)
    if found is None:
        return None
    number, name, first = found
    return number, f"{name or 'Error'}: {first[:300]}".rstrip(": ")


def code_digest(nb: Any) -> str:
    """SHA-256 (hex) of the code cells' sources, the Colab set-up cell left out, in order."""
    sources = [stored_text(c.source) for c in _code_cells(nb) if COLAB_TAG not in cell_tags(c)]
    payload = json.dumps(sources, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def entry(nb: Any, seconds: float, error: str, date: str, commit: str) -> dict[str, Any]:
    """A chapter's entry in a compat record (``scripts/compat/schema.py``).

    Args:
        nb: the executed notebook (``None`` when it could not be read).
        seconds: how long it ran.
        error: the runner's error line (``""`` when every cell ran and every record was read).
        date, commit: when and from which commit of the book it ran.

    Returns:
        ``{"status": "ran"|"failed", "seconds", "failed_cell", "error", "skipped",
        "code_sha256", "date", "commit"}``: ``failed_cell`` is a code cell number or None,
        ``error`` the error type and first message line (the runner's line where no cell
        holds an error), ``code_sha256`` None for an unreadable notebook.
    """
    failed = failed_cell(nb) if nb is not None else None
    status = "failed" if error or failed else "ran"
    if status == "failed":
        error = failed[1] if failed else error.splitlines()[0][:300]
    return {
        "status": status,
        "seconds": round(float(seconds), 1),
        "failed_cell": failed[0] if failed else None,
        "error": error if status == "failed" else "",
        "skipped": skipped_sections(nb) if nb is not None else [],
        "code_sha256": code_digest(nb) if nb is not None else None,
        "date": date,
        "commit": commit,
    }


def skipped_text(skipped: list[dict[str, str]]) -> str:
    """``N section(s) skipped: <section> (<reason>); ...`` (``""`` when none)."""
    if not skipped:
        return ""
    parts = [s["section"] + (f" ({s['reason']})" if s["reason"] else "") for s in skipped]
    noun = "section" if len(skipped) == 1 else "sections"
    return f"{len(skipped)} {noun} skipped: " + "; ".join(parts)


def outcome_text(item: dict[str, Any]) -> str:
    """An entry in words: ``ran``, ``ran, N sections skipped: ...``, ``failed at code cell N:
    Error: message`` (or ``failed: <runner's error>`` without a cell)."""
    if item["status"] == "failed":
        where = f" at code cell {item['failed_cell']}" if item["failed_cell"] else ""
        return f"failed{where}: {item['error']}"
    skipped = skipped_text(item["skipped"])
    return f"ran, {skipped}" if skipped else "ran"


def line(name: str, item: dict[str, Any], width: int = 0) -> str:
    """One chapter's line: ``<name>  <outcome>  (<seconds> s)``."""
    return f"{name:<{width}}  {outcome_text(item)}  ({item['seconds']:.1f} s)"
