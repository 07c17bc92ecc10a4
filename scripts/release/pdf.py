"""Print the whole book as one PDF, for readers offline (``make pdf``).

    python -m scripts.release.pdf [--html <single-page intro.html>] [--out <file.pdf>]

Input: Jupyter Book 1.x's single-page HTML build (``jupyter-book build . --builder
singlehtml``, which ``make pdf`` runs first): every page of ``_toc.yml`` in one document, with
the stored outputs and figures. It is printed by the Chromium the browser test uses
(``chromium`` on the PATH: ``make browser-deps`` installs Debian's where none is), driven
through Playwright, with every request that is not a local file refused (so nothing is fetched
from a CDN), every image loaded and MathJax typeset before printing. The PDF carries an outline
(bookmarks) built from the headings, and tags (each figure with its alt text).

Output: ``_build/html/pytorch-tricks-executed.pdf`` (:data:`PDF_NAME`), inside the HTML book, so
the site serves it and ``book/intro.md`` links to it. Without Chromium or Playwright it prints
why and exits 1, writing nothing (0 with ``--skip-without-chromium``, as ``make test`` runs it:
the browser test, which checks the PDF, skips without Chromium too).

Time, on the book's 2-core machine: about 15 s for the single-page build and 20-30 s to print
the 400-odd pages when it is quiet (40 s and 95 s when it is busy).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.book.find_notebooks import ROOT

#: The PDF's file name; the site links to it (book/intro.md) and the browser test checks it.
PDF_NAME = "pytorch-tricks-executed.pdf"
SINGLEHTML = ROOT / "_build" / "singlehtml" / "book" / "intro.html"  # _toc.yml's root
OUT = ROOT / "_build" / "html" / PDF_NAME

# The browser test's flags (tests/test_book_browser.py): no sandbox (root in CI), no GPU, no
# network chatter.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Paper has no horizontal scroll bar: long code and output lines wrap instead of being cut off.
PRINT_CSS = "pre { white-space: pre-wrap !important; overflow-wrap: anywhere; overflow: visible; }"

FOOTER = (
    '<div style="font-size:8px;width:100%;text-align:center;color:#555">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)


@dataclass(frozen=True)
class PdfFacts:
    """What the browser test checks in the printed book (read by :func:`pdf_facts`)."""

    pages: int  #: page objects
    outline: list[str]  #: bookmark titles (the headings), in document order
    alt_texts: list[str]  #: alt text of every tagged figure
    images: int  #: raster images embedded (SVG figures print as vector drawings)


_STRING_AFTER = re.compile(rb"/(Title|Alt)\s*([(<])")
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


def _pdf_string(data: bytes, start: int) -> tuple[str, int]:
    """Decode the PDF string opening at ``data[start]`` (``(`` literal or ``<`` hex)."""
    if data[start : start + 1] == b"<":
        end = data.index(b">", start)
        raw = bytes.fromhex(data[start + 1 : end].decode("ascii"))
        pos = end + 1
    else:
        out, depth, pos = bytearray(), 1, start + 1
        while depth:
            c = data[pos : pos + 1]
            if c == b"\\":
                nxt = data[pos + 1 : pos + 2]
                octal = re.match(rb"[0-7]{1,3}", data[pos + 1 : pos + 4])
                if octal:
                    out.append(int(octal.group(0), 8) & 0xFF)
                    pos += 1 + len(octal.group(0))
                    continue
                out += _ESCAPES.get(nxt, nxt if nxt not in b"\r\n" else b"")
                pos += 2
                continue
            depth += c == b"("
            depth -= c == b")"
            if depth:
                out += c
            pos += 1
        raw = bytes(out)
    if raw.startswith(b"\xfe\xff"):
        return raw[2:].decode("utf-16-be"), pos
    return raw.decode("latin-1"), pos


def pdf_facts(path: Path) -> PdfFacts:
    """Pages, outline titles, figure alt texts and raster images of a Chromium-printed PDF.

    Reads the file's bytes without a PDF library: Chromium (Skia) writes every object in the
    clear (no object streams), the page contents alone being compressed.

    Raises:
        ValueError: not a PDF, or one whose objects are compressed (not Chromium's).
    """
    data = Path(path).read_bytes()
    if not data.startswith(b"%PDF-"):
        raise ValueError(f"{path}: not a PDF")
    if b"/ObjStm" in data:
        raise ValueError(f"{path}: objects in compressed streams; this reader needs them plain")
    strings: dict[str, list[str]] = {"Title": [], "Alt": []}
    for m in _STRING_AFTER.finditer(data):
        text, _ = _pdf_string(data, m.start(2))
        strings[m.group(1).decode()].append(text)
    return PdfFacts(
        pages=len(re.findall(rb"/Type\s*/Page\b(?!s)", data)),
        outline=strings["Title"],
        alt_texts=strings["Alt"],
        images=len(re.findall(rb"/Subtype\s*/Image\b", data)),
    )


def chromium() -> str | None:
    """The Chromium executable the browser test uses, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def print_pdf(html: Path, out: Path, executable: str) -> int:
    """Print ``html`` (a file) to ``out`` with headless Chromium; returns the refused requests.

    Raises:
        FileNotFoundError: ``html`` does not exist.
    """
    if not html.is_file():
        raise FileNotFoundError(f"{html}: build it with jupyter-book build . --builder singlehtml")
    from playwright.sync_api import sync_playwright

    # The single page lies in book/ but its links (_static/, _images/) are relative to the
    # build's root: print a copy placed there.
    base = next((d for d in html.resolve().parents if (d / "_static").is_dir()), html.parent)
    printed = base / "whole-book.html"
    shutil.copyfile(html, printed)

    refused: list[str] = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route("**/*", route)
        page.goto(printed.as_uri(), wait_until="load")
        page.evaluate(
            "async () => { const m = window.MathJax;"
            " if (m && m.startup && m.startup.promise) await m.startup.promise; }"
        )
        # Every figure loaded and decoded before printing (the book's images load lazily).
        page.evaluate(
            "async () => { const imgs = [...document.images];"
            " imgs.forEach(i => { i.loading = 'eager'; });"
            " await Promise.all(imgs.map(i => i.decode().catch(() => null))); }"
        )
        broken = page.eval_on_selector_all(
            "img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)"
        )
        if broken:
            browser.close()
            raise RuntimeError(f"images that did not load: {broken}")
        page.emulate_media(media="print")
        page.add_style_tag(content=PRINT_CSS)
        page.pdf(
            path=str(out),
            format="A4",
            print_background=True,
            margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
            display_header_footer=True,
            header_template="<div></div>",
            footer_template=FOOTER,
            outline=True,
            tagged=True,
        )
        browser.close()
    return len(refused)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=SINGLEHTML, help="the single-page book")
    parser.add_argument("--out", type=Path, default=OUT, help="where the PDF goes")
    parser.add_argument(
        "--skip-without-chromium",
        action="store_true",
        help="exit 0 without Chromium (make test: the browser test then skips too)",
    )
    args = parser.parse_args(argv)
    executable = chromium()
    if executable is None:
        print("book_pdf: Chromium is not installed (make browser-deps): no PDF", file=sys.stderr)
        return 0 if args.skip_without_chromium else 1
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        print("book_pdf: playwright is not installed (make venv): no PDF", file=sys.stderr)
        return 1
    start = time.monotonic()
    refused = print_pdf(args.html, args.out, executable)
    size = args.out.stat().st_size
    facts = pdf_facts(args.out)
    print(
        f"book_pdf: {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}"
        f" ({facts.pages} pages, {len(facts.alt_texts)} figures, {size / 1e6:.1f} MB,"
        f" printed in {time.monotonic() - start:.0f} s"
        f"{f', {refused} non-local requests refused' if refused else ''})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
