"""Sphinx extension: what a chapter's header says, and the links that must not be dead.

Loaded through ``sphinx.local_extensions`` in ``_config.yml``. It re-executes nothing: every
fact comes from the stored notebook.

- Under each chapter's title, one line from the notebook's stored environment card (the
  ``environment`` block its setup cell prints, ``tricks_helpers.env``): the date it was
  executed, the torch release and build, and the Python it ran on
  (``Executed 2026-11-27 with torch 2.13.0 (cpu build), Python 3.11.7``).
- Each chapter's description (``<meta name="description">`` and ``og:description``, written by
  sphinxext-opengraph) is its tip, the "Do this" admonition, cut at :data:`DESCRIPTION_CHARS`.
- The theme's edit-this-page button (``html.use_edit_page_button``) opens ``main``: the site
  is built from a release tag (``repository.branch``), and GitHub edits only branches.
- ``sitemap.xml`` in the HTML build: every page's address under ``html_baseurl``, written at
  the end of each build from every document of the project (an incremental build writes only
  the pages that changed; the sitemap still lists them all).
- A block of class ``book-pdf`` (the intro's link to the whole-book PDF) is left out of a page
  unless ``_build/html/pytorch-tricks-executed.pdf`` exists when the page is written (``make
  pdf`` before ``make book``): no dead link after ``make book`` alone. Pages holding such a
  block are rewritten on every build, so the link follows the PDF.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes

#: The PDF ``make pdf`` writes inside the HTML book (scripts/release/pdf.py's PDF_NAME).
PDF_NAME = "pytorch-tricks-executed.pdf"
#: The class of a block shown only where the PDF exists.
PDF_CLASS = "book-pdf"
#: The class of the line under a chapter's title (the browser test looks for it).
STAMP_CLASS = "chapter-stamp"
#: The branch the edit button opens.
EDIT_BRANCH = "main"
EDIT_LABEL = "source-edit-button"
#: A description longer than this is cut at a word and ends with "...".
DESCRIPTION_CHARS = 200

_CARD_LINE = re.compile(r"^\s+(torch|python|executed)\s+(\S.*?)\s*$")


@dataclass(frozen=True)
class Stamp:
    """What a notebook's stored environment card says about its run."""

    executed: str  # YYYY-MM-DD
    torch: str  # e.g. "2.13.0 (build cpu)"
    python: str

    def text(self) -> str:
        """``Executed <date> with torch <release> (<build> build), Python <version>``."""
        match = re.fullmatch(r"(\S+) \(build (\S+)\)", self.torch)
        torch = f"{match.group(1)} ({match.group(2)} build)" if match else self.torch
        return f"Executed {self.executed} with torch {torch}, Python {self.python}"


def card_stamp(nb: dict[str, Any]) -> Stamp | None:
    """The stamp of the first stored output that is an environment card, or None.

    Args:
        nb: a notebook as parsed JSON (nbformat 4).

    Returns:
        The card's ``executed``, ``torch`` and ``python`` lines; None when no stored output is a
        card with all three (a notebook never executed, a page that is not a chapter).
    """
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") != "stream":
                continue
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            if not text.startswith("environment\n"):
                continue
            fields = {}
            for line in text.splitlines()[1:]:
                match = _CARD_LINE.match(line)
                if match:
                    fields.setdefault(match.group(1), match.group(2))
            if {"torch", "python", "executed"} <= fields.keys():
                return Stamp(fields["executed"], fields["torch"], fields["python"])
    return None


def edit_url_on_branch(url: str, branch: str = EDIT_BRANCH) -> str:
    """A GitHub ``.../edit/<ref>/<path>`` url with ``<ref>`` replaced by ``branch``.

    Raises:
        ValueError: the url is not a GitHub edit url.
    """
    match = re.fullmatch(r"(https://github\.com/[^/]+/[^/]+/edit/)[^/]+/(.+)", url)
    if match is None:
        raise ValueError(f"not a GitHub edit url: {url!r}")
    return f"{match.group(1)}{branch}/{match.group(2)}"


def retarget_edit(buttons: list[dict[str, Any]], branch: str = EDIT_BRANCH) -> int:
    """Point every edit button in ``buttons`` (groups included) at ``branch``; how many."""
    changed = 0
    for button in buttons:
        if button.get("label") == EDIT_LABEL and button.get("url"):
            button["url"] = edit_url_on_branch(button["url"], branch)
            changed += 1
        changed += retarget_edit(button.get("buttons", []), branch)
    return changed


def shorten(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """``text`` on one line, cut at the last whole word within ``limit`` characters + "..."."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 3].rsplit(" ", 1)[0].rstrip(" ,;:") + "..."


def tip_text(doctree) -> str | None:
    """The text of the page's first ``tip`` admonition without its title, or None."""
    for node in doctree.findall(nodes.Element):
        if isinstance(node, nodes.admonition | nodes.tip) and (
            isinstance(node, nodes.tip) or "tip" in node.get("classes", [])
        ):
            parts = [c.astext() for c in node.children if not isinstance(c, nodes.title)]
            return " ".join(parts).strip() or None
    return None


def pdf_path(srcdir: str | Path) -> Path:
    """Where ``make pdf`` writes the whole-book PDF."""
    return Path(srcdir) / "_build" / "html" / PDF_NAME


def _stamp_node(stamp: Stamp) -> nodes.paragraph:
    return nodes.paragraph("", stamp.text(), classes=[STAMP_CLASS])


def _on_doctree_read(app, doctree) -> None:
    source = Path(app.env.doc2path(app.env.docname))
    if source.suffix != ".ipynb":
        return
    stamp = card_stamp(json.loads(source.read_text(encoding="utf-8")))
    section = next(iter(doctree.findall(nodes.section)), None)
    if stamp is None or section is None or not isinstance(section[0], nodes.title):
        return
    section.insert(1, _stamp_node(stamp))
    tip = tip_text(doctree)
    if tip:
        app.env.metadata[app.env.docname].setdefault("og:description", shorten(tip))


def _has_pdf_block(doctree) -> bool:
    return any(PDF_CLASS in node.get("classes", []) for node in doctree.findall(nodes.Element))


def _on_doctree_read_pdf(app, doctree) -> None:
    pages = app.env.__dict__.setdefault("book_pdf_pages", set())
    pages.discard(app.env.docname)
    if _has_pdf_block(doctree):
        pages.add(app.env.docname)


def _on_env_get_outdated(app, env, added, changed, removed) -> list[str]:
    return sorted(getattr(env, "book_pdf_pages", set()) - set(removed))


def _on_doctree_resolved(app, doctree, docname) -> None:
    if pdf_path(app.srcdir).is_file():
        return
    for node in list(doctree.findall(nodes.Element)):
        if PDF_CLASS in node.get("classes", []) and node.parent is not None:
            node.parent.remove(node)


def _on_page_description(app, pagename, templatename, context, doctree) -> None:
    """Before sphinxext-opengraph (priority 500): the page's ``og:description`` (the tip) is its
    meta description too, so opengraph does not add one from the first paragraphs."""
    described = (context.get("meta") or {}).get("og:description")
    if described and "metatags" in context:
        context["metatags"] += f'\n<meta name="description" content="{html.escape(described)}" />'


def _on_page(app, pagename, templatename, context, doctree) -> None:
    if context.get("header_buttons"):
        retarget_edit(context["header_buttons"])


def sitemap_xml(urls: list[str]) -> str:
    """A sitemap (sitemaps.org 0.9) listing ``urls``."""
    body = "".join(f"<url><loc>{html.escape(u)}</loc></url>" for u in urls)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>\n'
    )


def _on_build_finished(app, exception) -> None:
    base = app.config.html_baseurl
    if exception is not None or app.builder.name != "html" or not base:
        return
    base = base.rstrip("/") + "/"
    urls = [base + app.builder.get_target_uri(doc) for doc in sorted(app.env.found_docs)]
    (Path(app.outdir) / "sitemap.xml").write_text(sitemap_xml(urls), encoding="utf-8")


def setup(app) -> dict[str, Any]:
    app.connect("build-finished", _on_build_finished)
    app.connect("doctree-read", _on_doctree_read)
    app.connect("doctree-read", _on_doctree_read_pdf)
    app.connect("env-get-outdated", _on_env_get_outdated)
    app.connect("doctree-resolved", _on_doctree_resolved)
    app.connect("html-page-context", _on_page_description, priority=400)
    app.connect("html-page-context", _on_page, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
