"""The results page's claims section: each chapter's advice and what every machine's run decided.

A chapter states its advice as claims (``tricks_helpers.claims``); the book's runner stores the
claims each run decided in the machine's results file (``claims``). This section shows them side
by side, one row per claim (chapter, key, advice and its condition), one column per results file
(``HELD``, ``NOT HELD HERE``, ``UNDECIDED``, ``NOT DECIDED HERE``, or ``-`` where that run
recorded no such claim), and lists the claims whose status differs between machines. Every
string is rendered as text (:func:`results_machines.cell_text`): a results file is untrusted
input.
"""

from __future__ import annotations

from scripts.results.machines import cell_text, column_names


def claim_rows(files: list[dict]) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """``{(chapter, key): (advice [condition], [status per file])}``, in first-recorded order.

    The advice shown is the first file's that records the claim (the reference run first)."""
    rows: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for i, f in enumerate(files):
        for c in f.get("claims", []):
            key = (c["chapter"], c["key"])
            if key not in rows:
                rows[key] = (f"{c['advice']} ({c['condition']})", ["-"] * len(files))
            rows[key][1][i] = c["status"]
    return rows


def render_claims(files: list[dict]) -> list[str]:
    """The section's markdown lines (none when no file holds a claim)."""
    rows = claim_rows(files)
    if not rows:
        return []
    names = column_names(files)
    out = [
        "## Claims by machine",
        "",
        "Each chapter's advice, as its claims table states it, and what each recorded run "
        "decided: HELD, NOT HELD HERE (the run contradicted it), UNDECIDED (an interval "
        "straddled the noise threshold: the run said nothing either way), or NOT DECIDED HERE "
        "(its condition, such as a GPU or native bf16, was absent and nothing of its case was "
        "timed).",
        "",
        "| chapter | claim | advice (condition) | "
        + " | ".join(cell_text(n) for n in names)
        + " |",
        "| --- " * (len(names) + 3) + "|",
    ]
    differs = []
    for (chapter, key), (advice, statuses) in rows.items():
        cells = [cell_text(chapter), cell_text(key), cell_text(advice)]
        out.append("| " + " | ".join(cells + [cell_text(s) for s in statuses]) + " |")
        if len({s for s in statuses if s != "-"}) > 1:
            pairs = "; ".join(f"{cell_text(n)} {cell_text(s)}" for n, s in zip(names, statuses))
            differs.append(f"- {cell_text(chapter)}: {cell_text(key)}: {pairs}")
    if len(files) > 1:
        out += ["", "### Claims decided differently", ""]
        out += differs or ["Every claim recorded on more than one machine was decided alike."]
    return out + [""]
