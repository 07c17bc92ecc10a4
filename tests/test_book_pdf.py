"""Tests of scripts/release/pdf.py (make pdf): its PDF reader and its exits without Chromium.

The printed book itself is checked by the browser test (tests/test_book_browser.py).
"""

from __future__ import annotations

import pytest

from scripts.release import pdf as book_pdf
from scripts.release.pdf import pdf_facts


def test_pdf_reader_reads_strings_and_refuses_what_it_cannot(tmp_path):
    """Literal and UTF-16 strings, escapes, pages, images, and the reader's two refusals."""
    data = (
        b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >> endobj\n"
        b"2 0 obj << /Type /Page >> endobj 3 0 obj << /Type /Page >> endobj\n"
        b"4 0 obj << /Title (A \\(b\\) c\\101) >> endobj\n"
        b"5 0 obj << /Title <FEFF00300031002000B7> /Alt (x\\\ny) >> endobj\n"
        b"6 0 obj << /Subtype /Image >> endobj\n"
    )
    good = tmp_path / "a.pdf"
    good.write_bytes(data)
    facts = pdf_facts(good)
    assert (facts.pages, facts.images) == (2, 1)
    assert facts.outline == ["A (b) cA", "01 \u00b7"] and facts.alt_texts == ["xy"]
    (tmp_path / "b.pdf").write_bytes(b"<html>")
    with pytest.raises(ValueError, match="not a PDF"):
        pdf_facts(tmp_path / "b.pdf")
    (tmp_path / "c.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /ObjStm >> endobj")
    with pytest.raises(ValueError, match="compressed streams"):
        pdf_facts(tmp_path / "c.pdf")


def test_without_chromium_make_pdf_fails_and_make_test_goes_on(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(book_pdf, "chromium", lambda: None)
    out = tmp_path / "book.pdf"
    assert book_pdf.main(["--out", str(out)]) == 1
    assert "Chromium is not installed (make browser-deps): no PDF" in capsys.readouterr().err
    assert book_pdf.main(["--out", str(out), "--skip-without-chromium"]) == 0
    assert not out.exists()


def test_a_missing_single_page_build_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="--builder singlehtml"):
        book_pdf.print_pdf(tmp_path / "intro.html", tmp_path / "b.pdf", "chromium")
