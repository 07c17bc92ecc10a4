"""scripts/release/page_header.py: the chapter header line, the description, edit and PDF links."""

from __future__ import annotations

import json

import pytest
from docutils import nodes

from scripts.release import page_header as ph

CARD = "environment\n  torch    2.13.0 (build cpu)\n  python   3.11.7\n  executed 2026-11-27\n"


def nb_with(*texts):
    outputs = [{"output_type": "stream", "name": "stdout", "text": t} for t in texts]
    return {
        "cells": [
            {"cell_type": "markdown", "source": "# T"},
            {"cell_type": "code", "outputs": outputs},
        ]
    }


def test_the_stamp_comes_from_the_stored_environment_card():
    stamp = ph.card_stamp(nb_with("hello\n", CARD))
    assert stamp == ph.Stamp("2026-11-27", "2.13.0 (build cpu)", "3.11.7")
    assert stamp.text() == "Executed 2026-11-27 with torch 2.13.0 (cpu build), Python 3.11.7"
    # a list-of-lines output (as nbformat stores it) reads the same
    assert ph.card_stamp(nb_with(CARD.splitlines(keepends=True))) == stamp


def test_no_card_or_an_incomplete_card_gives_no_stamp():
    assert ph.card_stamp(nb_with("environment\n  torch 2.13.0\n")) is None
    assert ph.card_stamp({"cells": []}) is None


def test_every_chapter_has_a_stamp(repo_root):
    for path in sorted((repo_root / "book").glob("[0-9][0-9]_*.ipynb")):
        stamp = ph.card_stamp(json.loads(path.read_text(encoding="utf-8")))
        assert stamp is not None, path.name


def test_the_edit_button_opens_main():
    url = "https://github.com/o/r/edit/v0.2.0/book/01_a.ipynb"
    assert ph.edit_url_on_branch(url) == "https://github.com/o/r/edit/main/book/01_a.ipynb"
    buttons = [{"label": "group", "buttons": [{"label": ph.EDIT_LABEL, "url": url}]}]
    assert ph.retarget_edit(buttons) == 1
    assert buttons[0]["buttons"][0]["url"].endswith("/edit/main/book/01_a.ipynb")
    with pytest.raises(ValueError, match="not a GitHub edit url"):
        ph.edit_url_on_branch("https://example.org/x")


def test_the_description_is_the_tip_shortened_at_a_word():
    doc = nodes.section()
    tip = nodes.admonition(
        "", nodes.title("", "Do this"), nodes.paragraph("", "Seed  every\nworker.")
    )
    tip["classes"] = ["tip"]
    doc += nodes.paragraph("", "before")
    doc += tip
    assert ph.tip_text(doc) == "Seed  every\nworker."
    assert ph.shorten("Seed  every\nworker.") == "Seed every worker."
    assert ph.shorten("word " * 100, 20) == "word word word..."
    assert ph.tip_text(nodes.section()) is None


def test_the_pdf_is_looked_for_inside_the_html_build(tmp_path):
    assert ph.pdf_path(tmp_path) == tmp_path / "_build" / "html" / "pytorch-tricks-executed.pdf"


def test_the_sitemap_lists_every_url_escaped():
    xml = ph.sitemap_xml(["https://h/a.html", "https://h/b&c.html"])
    assert xml.startswith('<?xml version="1.0" encoding="utf-8"?>')
    assert "<url><loc>https://h/a.html</loc></url><url><loc>https://h/b&amp;c.html</loc>" in xml
