"""The results page's machine-keyed sections (issue 40): its first screen, how to add a machine,
every claim and every comparison once per machine.

- *Which tricks pay off where*: one line per recorded machine, named by what decides the tricks
  (:func:`scripts.results.kinds.kind_name`), then the claims whose decision differs between
  machines, each machine's decision with its magnitude (``HELD 3.77x [3.6-3.9]``);
- *Add your machine*: ``make survey``, the check a contributed file passes, the issue form;
- *Claims by machine*: every claim, one row each, a column per machine (no id headers);
- *Comparisons by machine*: per chapter, each comparison once (a comparison a chapter records
  under two labels is one, :func:`scripts.results.kinds.unique_records`) with each machine's
  verdict and interval.

A survey's chapter whose code changed since its commit is marked ``(stale)`` in every cell.
Every string from a results file goes through ``cell_text``: a contributed file is data.
"""

from __future__ import annotations

from pathlib import Path

from scripts.results.kinds import (
    claim_cell,
    kind_facts,
    record_cell,
    stale_chapters,
    survey_code,
    unique_records,
)
from scripts.results.machines import cell_text, chapters_text, column_names, limits_text

ISSUE_FORM = ".github/ISSUE_TEMPLATE/machine-survey.yml"


def file_name(f: dict) -> str:
    """A results file's name (``schema.file_name``'s rule: machine id, ``-survey`` for a survey)."""
    return f["machine"]["id"] + ("" if f["source"] == "book" else f"-{f['source']}") + ".json"


def headers(files: list[dict]) -> list[str]:
    """One column header per file: its kind name, ``(book)`` after the reference run's."""
    return column_names(files)


def stale_map(files: list[dict], root: Path) -> list[list[str]]:
    """Each file's stale chapters (:func:`kinds.stale_chapters`), in ``files`` order."""
    code = survey_code(root)
    ref = files[0] if files and files[0]["source"] == "book" else None
    return [stale_chapters(f, ref, root, code.get(file_name(f))) for f in files]


def claim_table(files: list[dict], stale: list[list[str]]) -> dict[tuple, tuple[str, list[str]]]:
    """``{(chapter, key): (advice (condition), [cell per file])}`` in first-recorded order."""
    rows: dict[tuple, tuple[str, list[str]]] = {}
    for f in files:
        for c in f.get("claims", []):
            key = (c["chapter"], c["key"])
            if key not in rows:
                rows[key] = (f"{c['advice']} ({c['condition']})", ["-"] * len(files))
    for i, f in enumerate(files):
        for c in f.get("claims", []):
            rows[(c["chapter"], c["key"])][1][i] = claim_cell(c, c["chapter"] in stale[i])
    return rows


def _status(cell: str) -> str:
    return cell.split(" ", 1)[0] if not cell.startswith("NOT") else " ".join(cell.split()[:3])


def differing(rows: dict[tuple, tuple[str, list[str]]]) -> tuple[list[tuple], list[tuple]]:
    """The claims machines decided differently: those HELD on one machine and NOT HELD HERE or
    NOT DECIDED HERE on another (the trick pays off on one kind and not on another), then
    those that differ only by an UNDECIDED run (``-``: not recorded, left aside)."""
    decisive, other = [], []
    for key, (_, cells) in rows.items():
        seen = {_status(c) for c in cells if c != "-"}
        if len(seen) < 2:
            continue
        if "HELD" in seen and seen & {"NOT HELD HERE", "NOT DECIDED HERE"}:
            decisive.append(key)
        else:
            other.append(key)
    return decisive, other


def _table(head: list[str], body: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "| --- " * len(head) + "|"]
    return out + ["| " + " | ".join(row) + " |" for row in body]


def render_overview(files: list[dict], root: Path, titles: dict[str, str]) -> list[str]:
    """The first screen and *Add your machine* (markdown lines)."""
    if not files:
        return []
    stale = stale_map(files, root)
    names = headers(files)
    rows = claim_table(files, stale)
    diff, other = differing(rows)
    out = [
        "## Which tricks pay off where",
        "",
        f"Of {len(rows)} claims, {len(diff)} pay off on one kind of machine and not (or not "
        "decided) on another: below, with each machine's speed-up and interval where the claim "
        f"is measured. {len(other)} more differ only where a run was UNDECIDED; the rest were "
        "decided alike (all in *Claims by machine*).",
        "",
    ]
    body = [
        [cell_text(f"{k[0][:2]} · {rows[k][0]}")] + [cell_text(c) for c in rows[k][1]] for k in diff
    ]
    out += _table(["claim (condition)"] + [cell_text(n) for n in names], body)
    out += ["", "The columns, by what decides the tricks:", ""]
    for name, f, st in zip(names, files, stale):
        line = f"- {cell_text(name)}: {cell_text(kind_facts(f))}"
        if st:
            line += f"; stale for {cell_text(', '.join(c[:2] for c in st))} (code changed since)"
        out.append(line + ".")
    out += [
        "",
        "## Add your machine",
        "",
        "A CPU or GPU of a kind not listed above decides these claims for readers like you:",
        "",
        "1. `make survey` runs every chapter on your machine (the book's pages are left as "
        "they are) and writes `results/<machine-id>-survey.json`;",
        "2. `python -m scripts.results.check --contributed results/<machine-id>-survey.json` "
        "runs every check the book runs on a contributed file; "
        "`make survey-compare` prints each comparison once against the book's run;",
        "3. open the *Machine survey* issue form "
        f"(`{ISSUE_FORM}`, the issues button at the top of every page) and attach the file, "
        "with the commit you ran it at.",
        "",
    ]
    return out


def render_claims_by_machine(files: list[dict], root: Path) -> list[str]:
    """Every claim, one row each, each machine's decision with its magnitude."""
    stale = stale_map(files, root)
    rows = claim_table(files, stale)
    if not rows:
        return []
    out = [
        "## Claims by machine",
        "",
        "Each chapter's advice and what each machine decided: HELD, NOT HELD HERE (the run "
        "contradicted it), UNDECIDED (an interval straddled the noise threshold), NOT DECIDED "
        "HERE (its condition was absent and nothing of its case was timed); `-`: not recorded "
        "there; (stale): the chapter's code changed since that survey.",
        "",
    ]
    body = [
        [cell_text(f"{k[0][:2]} · {adv}")] + [cell_text(c) for c in cells]
        for k, (adv, cells) in rows.items()
    ]
    return out + _table(["claim (condition)"] + [cell_text(n) for n in headers(files)], body) + [""]


def render_comparisons(
    files: list[dict], root: Path, titles: dict[str, str], cards: dict[str, str] | None = None
) -> list[str]:
    """Per chapter, each comparison once: its label, why partner, each machine's verdict
    (``cards``: chapter -> the book's run's card line, markdown made by the page)."""
    stale = stale_map(files, root)
    per_file = [unique_records(f["records"]) for f in files]
    rows: dict[tuple[str, str], dict] = {}
    for i, recs in enumerate(per_file):
        for r in recs:
            row = rows.setdefault((r["chapter"], r["label"]), {"why": r["why"], "cells": {}})
            row["cells"].setdefault(i, (r, r["chapter"] in stale[i]))
            if not row["why"]:
                row["why"] = r["why"]
    out = [
        "## Comparisons by machine",
        "",
        f"{len(rows)} comparisons, each once: median speed-up (baseline time / trick time) "
        "with its interval and the verdict decided from it, per machine; *why*: the invariant "
        "partner counted beside it.",
        "",
    ]
    names = [cell_text(n) for n in headers(files)]
    for chapter in dict.fromkeys(ch for ch, _ in rows):
        out += [f"### {cell_text(titles.get(chapter, chapter))}", ""]
        if cards and chapter in cards:
            out += [cards[chapter], ""]
        body = []
        for (ch, label), row in rows.items():
            if ch != chapter:
                continue
            cells = []
            for i in range(len(files)):
                rec, st = row["cells"].get(i, (None, False))
                cells.append(cell_text(record_cell(rec) + (" (stale)" if st and rec else "")))
            body.append([cell_text(label), cell_text(row["why"] or "")] + cells)
        out += _table(["comparison", "why"] + names, body) + [""]
    return out


def machine_details(files: list[dict]) -> list[str]:
    """Each machine's measured limits and chapters that ran (the facts behind the names)."""
    out = ["## The machines", ""]
    for name, f in zip(headers(files), files):
        out.append(
            f"- {cell_text(name)}: {cell_text(limits_text(f.get('limits')))}; "
            f"chapters: {cell_text(chapters_text(f))}."
        )
    return out + [""]
