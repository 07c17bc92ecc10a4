"""Sphinx extension: beside each chapter's claims table, what every recorded machine decided.

Issue 40: a reader on a newer CPU must find on the chapter page what its claims did on a CPU
like theirs. The notebook's stored outputs stay this run's alone (nbval compares them, so they
must not depend on which records exist); this extension, when the book is built, shows the
section's printed claims table (``Claims.table``, the text nbval compares) as an HTML table that
wraps on a laptop and a phone (:func:`claims_html`), and adds a table after the section's
content: one row per claim (its advice), one column per results file under ``results/``
named by what decides the tricks (``results.kinds.kind_name``), each cell the decision with
its magnitude, ``(stale)`` where the chapter's code changed since that survey. Every string
from a results file is HTML-escaped. Loaded by ``_config.yml`` (``sphinx.local_extensions``);
a chapter with no recorded claims, or a book without results files, gets nothing.
"""

from __future__ import annotations

import functools
import html
import re
import sys
from pathlib import Path
from typing import Any

from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # loaded by Sphinx from scripts/results/ alone
    sys.path.insert(0, str(ROOT))
SECTION_TITLE = "Claims this run decided"
CSS_CLASS = "other-machines"
TABLE_HEAD = "claims decided by this run: "
_CLAIM = re.compile(
    r"^  (HELD|NOT HELD HERE|UNDECIDED|NOT DECIDED HERE) +([A-Za-z0-9-]+): (.*?) \[(.*)\]$"
)
_EVIDENCE = re.compile(r"^    ([a-z ]+): (.*)$")


def claims_html(text: str) -> str:
    """The printed claims table (``Claims.table``) as an HTML table that wraps at any width:
    status, advice (condition), evidence. Empty when ``text`` is not such a table: the stored
    text is then shown as it is (what nbval compares is that text, never this)."""
    lines = text.rstrip("\n").splitlines()
    if not lines or not lines[0].startswith(TABLE_HEAD) or len(lines) % 2 == 0:
        return ""
    esc = html.escape
    rows = []
    for head, evidence in zip(lines[1::2], lines[2::2]):
        m, e = _CLAIM.match(head), _EVIDENCE.match(evidence)
        if not (m and e):
            return ""
        status = m[1].lower().replace(" ", "-")
        rows.append(
            f'<tr><td class="claim-status claim-{status}">{esc(m[1])}</td>'
            f'<td>{esc(m[3])} <span class="claim-condition">({esc(m[4])})</span></td>'
            f"<td>{esc(e[1])}: {esc(e[2])}</td></tr>"
        )
    return (
        f'<div class="claims-table"><p>{esc(lines[0])}</p><table class="table"><thead><tr>'
        "<th>status</th><th>advice (condition)</th><th>evidence</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


@functools.lru_cache(maxsize=4)
def _files(root: Path) -> list[dict]:
    from scripts.results.machines import machine_files

    try:
        return machine_files(root)
    except (TypeError, ValueError):
        return []  # the results page's own check reports a bad file; the chapters go on


def chapter_table(chapter: str, files: list[dict], root: Path = ROOT) -> str:
    """The HTML block for ``chapter`` (empty when no machine recorded a claim of it)."""
    from scripts.results.overview import claim_table, headers, stale_map

    if not files:
        return ""
    stale = stale_map(files, root)
    rows = [(k, v) for k, v in claim_table(files, stale).items() if k[0] == chapter]
    if not rows:
        return ""
    esc = html.escape
    head = "".join(f"<th>{esc(n)}</th>" for n in headers(files))
    body = "".join(
        f"<tr><td>{esc(advice)}</td>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"
        for (_, _), (advice, cells) in rows
    )
    return (
        f'<div class="{CSS_CLASS}"><p class="rubric">On other machines</p>'
        "<p>What every recorded machine decided for these claims, with its speed-up and "
        "interval where the claim is measured (added when the book is built, from "
        "<code>results/</code>; the output above is this page's own run). "
        '<a href="results.html">All machines, and how to add yours</a>.</p>'
        f'<div class="{CSS_CLASS}-scroll"><table class="table"><thead><tr><th>claim '
        f"(condition)</th>{head}</tr></thead><tbody>{body}</tbody></table></div></div>"
    )


def _inject(app: Any, doctree: nodes.document, docname: str) -> None:
    chapter = docname.rsplit("/", 1)[-1]
    if not (docname.startswith("book/") and chapter[:2].isdigit()):
        return
    for section in doctree.findall(nodes.section):
        title = section.next_node(nodes.title)
        if title is None or title.astext().strip() != SECTION_TITLE:
            continue
        for block in list(section.findall(nodes.literal_block)):
            table = claims_html(block.astext())
            if table:
                block.replace_self(nodes.raw("", table, format="html"))
        root = Path(app.srcdir)
        block = chapter_table(chapter, _files(root), root)
        if block:
            # after the section's own content, before any subsection
            subs = [i for i, n in enumerate(section.children) if isinstance(n, nodes.section)]
            at = subs[0] if subs else len(section.children)
            section.insert(at, nodes.raw("", block, format="html"))
        return


def setup(app: Any) -> dict:
    app.connect("doctree-resolved", _inject)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
