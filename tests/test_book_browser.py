"""The built HTML book, loaded page by page in headless Chromium.

For every page of ``_toc.yml`` (chapters added there are checked as soon as they are listed)
this checks what a reader would notice:

- the page renders its title, every visible code cell's input and output, and every figure
  (images actually decoded), each figure with its caption and alt text from the notebook;
- the Colab set-up cell (tagged ``remove-cell``) is not on the page, and neither are nbval's
  markers (``NBVAL_*`` comments, ``nbval-*`` tags as text);
- math is typeset offline: MathJax is served by the book itself, and no raw ``$$``, ``\\(``
  or ``\\[`` is left in the visible prose;
- no internal link or image points at something missing;
- the whole-book PDF (``make pdf``; ``make test`` prints it after the HTML build) is there and
  current, with its pages, every page's title in its outline and every figure's alt text.

Only the book's own server is reachable from the browser (everything else is refused), so a
page that needs a CDN fails here as it would offline. A full-page screenshot of each page is
saved under ``_build/screenshots/``. Needs the built book (``make test`` builds it first) and
Chromium (``make browser-deps`` installs Debian's ``chromium`` where none is; GitHub's runner
image has its own); without either, the tests skip and say why.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from scripts.book.find_notebooks import toc_pages
from scripts.release.pdf import (
    CHROMIUM_ARGS,
    PDF_NAME,
    SINGLEHTML,
    pdf_facts,
)

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.skipif(
        not (HTML / "index.html").is_file(),
        reason="the HTML book is not built: `make book` (make test builds it first)",
    ),
    pytest.mark.skipif(
        CHROMIUM is None, reason="Chromium is not installed: `make browser-deps` installs it"
    ),
]

REMOVE_CELL = {"remove-cell", "remove_cell"}
REMOVE_INPUT = {"remove-input", "remove_input"}
REMOVE_OUTPUT = {"remove-output", "remove_output"}
RAW_MATH = ("$$", "\\(", "\\[")
MARKER_TEXT = re.compile(r"NBVAL_[A-Z_]+|nbval-(?:ignore-output|skip|check-output)")

# Visible prose of <main>: everything but code, outputs, typeset math and hidden elements.
PROSE_JS = """() => {
  const main = document.querySelector('main');
  if (!main) return '';
  const copy = main.cloneNode(true);
  copy.querySelectorAll('pre, code, .cell_output, mjx-container, script, style, .MathJax')
      .forEach(e => e.remove());
  return copy.innerText;
}"""


def plain(markdown: str) -> str:
    """Inline markdown as the browser shows it: without backticks and emphasis markers."""
    return re.sub(r"`|\*", "", markdown).strip()


# Sphinx's "smartquotes" turns straight quotes and "--" into typographic ones on the page
_TYPOGRAPHIC = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "--", "\u2014": "---"}
)


def words(text: str) -> str:
    """Text as a sequence of words, with typographic quotes and dashes made plain."""
    return " ".join(text.translate(_TYPOGRAPHIC).split())


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _has_math(markdown: str) -> bool:
    # MyST math is $...$, $$...$$ and {math} (dollarmath, amsmath); a "\\[" or "\\(" in MyST
    # is an escaped bracket (the results page escapes every "[" of a results file), not math
    return bool(re.search(r"\$\$|(?<![\\$])\$[^$\s][^$]*\$|```\{math\}", markdown))


def source_facts(name: str) -> dict:
    """What the page must show, read from its source (notebook or markdown)."""
    nb_path = ROOT / f"{name}.ipynb"
    if not nb_path.exists():
        text = (ROOT / f"{name}.md").read_text(encoding="utf-8")
        figures = [
            {"caption": None, "alt": m.group(1).strip()}
            for m in re.finditer(
                r"^```\{figure\}[^\n]*\n(?::[^\n]*\n)*?:alt: ([^\n]+)\n", text, flags=re.M
            )
        ]
        return {
            "title": plain(re.search(r"^# (.+)$", text, flags=re.M).group(1)),
            "code": 0,
            "outputs": 0,
            "images": len(figures),
            "figures": figures,
            "math": _has_math(text),
            "hidden": [],
            "recipe": 0,
            "folded": 0,
            "folded_outputs": 0,
            "hidden_outputs": 0,
        }
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    facts = {
        "title": None,
        "code": 0,
        "outputs": 0,
        "images": 0,
        "figures": [],
        "math": False,
        "hidden": [],
        "recipe": 0,  # code cells tagged recipe: their code shown expanded
        "folded": 0,  # code cells tagged hide-input: code folded, output shown
        "folded_outputs": 0,
        "hidden_outputs": 0,  # code cells tagged hide-output too: output folded as well
    }
    for cell in nb["cells"]:
        src = _text(cell.get("source"))
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] == "markdown":
            if facts["title"] is None:
                m = re.search(r"^# (.+)$", src, flags=re.M)
                facts["title"] = plain(m.group(1)) if m else None
            facts["math"] |= _has_math(src)
            continue
        if cell["cell_type"] != "code" or not src.strip():
            continue
        if tags & REMOVE_CELL:
            first = next((line for line in src.splitlines() if line.strip()), "")
            facts["hidden"].append(first.strip())
            continue
        if not tags & REMOVE_INPUT:
            facts["code"] += 1
        outs = cell.get("outputs", []) if not tags & REMOVE_OUTPUT else []
        facts["recipe"] += "recipe" in tags
        facts["folded"] += "hide-input" in tags
        facts["folded_outputs"] += "hide-input" in tags and "hide-output" not in tags and bool(outs)
        facts["hidden_outputs"] += "hide-output" in tags and bool(outs)
        facts["outputs"] += bool(outs)
        n_images = sum(any(k.startswith("image/") for k in o.get("data", {})) for o in outs)
        facts["images"] += n_images
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        for _ in range(n_images):
            facts["figures"].append(
                {
                    "caption": mystnb.get("figure", {}).get("caption"),
                    "alt": mystnb.get("image", {}).get("alt"),
                }
            )
    return facts


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="module")
def server():
    handler = functools.partial(QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,  # the PDF's flags: one list (scripts/release/pdf.py)
        )
        yield b
        b.close()


@functools.cache
def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_source_facts_see_hidden_cells_and_figures():
    """The expectations themselves: a chapter's set-up cell is hidden, its figures counted."""
    chapters = [name for name in toc_pages() if (ROOT / f"{name}.ipynb").exists()]
    assert chapters, "no chapter notebooks in _toc.yml"
    for name in chapters:
        facts = source_facts(name)
        assert facts["title"], f"{name}: no '# ' title"
        assert len(facts["figures"]) == facts["images"]


@pytest.mark.parametrize("name", toc_pages())
def test_page_renders_everything(name, server, browser):
    facts = source_facts(name)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith(server):
            r.continue_()
        else:  # CDNs and trackers: refused at once, and remembered
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    url = urljoin(server, f"{name}.html")
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url} did not load"
    # MathJax typesets after load: wait for it where the book serves it (a no-op elsewhere).
    page.evaluate(
        "async () => { const m = window.MathJax;"
        " if (m && m.startup && m.startup.promise) await m.startup.promise; }"
    )

    h1 = page.locator("main h1").first.inner_text().strip().rstrip("#").strip()
    assert h1 == facts["title"], f"{name}: title {h1!r}, source says {facts['title']!r}"

    assert page.locator("div.cell_input").count() == facts["code"], f"{name}: code cells missing"
    assert page.locator("div.cell_output").count() == facts["outputs"], f"{name}: outputs missing"
    where = "div.cell_output img" if (ROOT / f"{name}.ipynb").exists() else "main figure img"
    shown = page.locator(where).count()
    assert shown == facts["images"], f"{name}: {shown} figures shown, source has {facts['images']}"

    # every figure: a caption under it and its alt text on the image
    figures = page.eval_on_selector_all(
        "main figure",
        """els => els.map(f => ({
        alt: (f.querySelector('img') || {}).alt || '',
        caption: ((f.querySelector('figcaption .caption-text') || {}).innerText || '').trim()
    }))""",
    )
    assert len(figures) == facts["images"], (
        f"{name}: {len(figures)} of {facts['images']} "
        "figures have a caption (cell metadata mystnb.figure.caption)"
    )
    for want, got in zip(facts["figures"], figures):
        assert want["alt"] and got["alt"] == want["alt"].strip(), f"{name}: alt text {got['alt']!r}"
        assert got["caption"], f"{name}: a figure without a caption"
        if want["caption"]:
            assert words(got["caption"]) == words(plain(want["caption"])), f"{name}: caption"

    # what a reader meets: the recipe's code expanded, the evidence's code folded with its
    # output in view (issue 30)
    recipes = page.locator("div.tag_recipe div.cell_input")
    assert recipes.count() == facts["recipe"], f"{name}: recipe cells missing"
    assert all(recipes.nth(i).is_visible() for i in range(recipes.count())), (
        f"{name}: a recipe's code is folded"
    )
    folded = page.locator("div.tag_hide-input div.cell_input")
    assert folded.count() == facts["folded"], f"{name}: hide-input cells missing"
    assert not any(folded.nth(i).is_visible() for i in range(folded.count())), (
        f"{name}: a hide-input cell's code is shown expanded"
    )
    results = page.locator("div.tag_hide-input:not(.tag_hide-output) div.cell_output")
    assert results.count() == facts["folded_outputs"], f"{name}: a folded cell's output missing"
    assert all(results.nth(i).is_visible() for i in range(results.count())), (
        f"{name}: a folded cell's output is hidden with its code"
    )
    # the set-up cell's environment card (its date and torch stand under the title) folds whole
    hidden = page.locator("div.tag_hide-output div.cell_output")
    assert hidden.count() == facts["hidden_outputs"], f"{name}: a hide-output cell's output missing"
    assert not any(hidden.nth(i).is_visible() for i in range(hidden.count())), (
        f"{name}: a hide-output cell's output is shown expanded"
    )

    text = page.locator("main").inner_text()
    for hidden in facts["hidden"]:
        assert hidden not in text, f"{name}: the hidden set-up cell shows ({hidden!r})"
    assert page.locator(".tag_colab-setup").count() == 0, f"{name}: set-up cell on the page"
    marker = MARKER_TEXT.search(text)
    assert marker is None, f"{name}: nbval marker {marker.group(0)!r} visible on the page"

    prose = page.evaluate(PROSE_JS)
    for raw in RAW_MATH:
        assert raw not in prose, f"{name}: raw math {raw!r} visible (MathJax did not typeset it)"
    if facts["math"]:
        assert page.locator("mjx-container").count() > 0, f"{name}: math not typeset"
    assert not [u for u in refused if "mathjax" in u.lower()], f"{name}: MathJax from a CDN"

    broken = page.eval_on_selector_all(
        "img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)"
    )
    assert broken == [], f"{name}: images that did not load: {broken}"

    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    for href in sorted(set(hrefs)):
        if not href.startswith(server):
            continue
        target, fragment = urldefrag(href)
        status, body = fetch(target)
        assert status == 200, f"{name}: broken internal link {urlparse(href).path} ({status})"
        if fragment and target.endswith(".html"):
            assert f'id="{fragment}"' in body, f"{name}: link to missing anchor #{fragment}"

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{Path(name).name}.png"), full_page=True)
    page.close()


#: The widths the results page and the chapters' machine tables are read at (issue 40).
READ_WIDTHS = {"desktop": {"width": 1366, "height": 768}, "phone": {"width": 390, "height": 844}}


def _off_screen(page, selector: str) -> list[str]:
    """The texts of table cells under ``selector`` whose right edge lies beyond the viewport
    (none when every column is readable without scrolling sideways)."""
    return page.locator(selector).evaluate_all(
        "els => els.filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)"
        ".map(e => e.innerText.slice(0, 60))"
    )


@pytest.mark.parametrize("width", READ_WIDTHS)
def test_results_page_keys_machines_by_kind_each_comparison_once(width, server, browser):
    """Issue 40: it opens with which tricks pay off on which kind of machine; columns named by
    native bf16/VNNI/AMX/GPU/cores, the capped run an emulation; each comparison once with its
    interval; no column off-screen at 1366 px or on a phone; how to add a machine."""
    from scripts.results.kinds import unique_records
    from scripts.results.machines import column_names, machine_files

    files = machine_files(ROOT)
    if len(files) < 2:
        pytest.skip(f"{len(files)} results file(s) in results/: nothing side by side to check")
    viewport = READ_WIDTHS[width]
    page = browser.new_page(viewport=viewport)
    response = page.goto(urljoin(server, "book/results.html"), wait_until="load")
    assert response is not None and response.status == 200
    first = page.locator("section#which-tricks-pay-off-where")
    assert first.count() == 1, "the page does not open with which tricks pay off where"
    h2 = page.locator(".bd-article h2").first.inner_text()
    assert "pay off where" in h2, f"the first section is {h2!r}"
    header = [t.strip() for t in first.locator("table th").all_inner_texts()]
    assert header[1:] == column_names(files), header
    assert not any(f["machine"]["id"] in " ".join(header) for f in files), "a machine id header"
    capped = [n for n, f in zip(column_names(files), files) if f["machine"]["capped"]]
    assert all("emulation" in n for n in capped), capped
    assert "emulation of an older CPU" in first.inner_text() or not capped
    assert _off_screen(page, "section#which-tricks-pay-off-where td") == []
    assert _off_screen(page, "section#claims-by-machine td") == []
    assert _off_screen(page, "section#comparisons-by-machine td") == []
    rows = page.locator("section#comparisons-by-machine tbody tr")
    labels = {(r["chapter"], r["label"]) for f in files for r in unique_records(f["records"])}
    assert rows.count() == len(labels), f"{rows.count()} comparison rows for {len(labels)}"
    assert re.search(r"\d\.\d+x \[\d", rows.first.inner_text()), "no interval in a row"
    add = page.locator("section#add-your-machine").inner_text()
    assert "make survey" in add and "scripts.results.check --contributed" in add
    stale = [f for f in files if f["source"] != "book"]
    if stale:
        assert "(stale)" in page.locator("section#claims-by-machine").inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"results-first-screen-{width}.png"))
    charts = page.locator("section#speed-ups-by-machine-by-chapter figure img")
    broken = charts.evaluate_all(
        "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)"
    )
    assert charts.count() and broken == [], "a machines chart did not load"
    page.close()


@pytest.mark.parametrize("width", READ_WIDTHS)
@pytest.mark.parametrize("name", ["book/04_mixed_precision", "book/07_quantization"])
def test_chapter_claims_table_wraps_and_other_machines_are_beside_it(name, width, server, browser):
    """Issue 40: the claims table is an HTML table readable without scrolling sideways, and
    beside it what every recorded machine decided, with magnitudes (added at build time)."""
    from scripts.results.machines import column_names, machine_files

    files = machine_files(ROOT)
    page = browser.new_page(viewport=READ_WIDTHS[width])
    page.goto(server + name + ".html", wait_until="load")
    claims = page.locator("section#claims-this-run-decided")
    assert claims.locator("div.claims-table table").count() == 1, "claims table not HTML"
    assert _off_screen(page, "section#claims-this-run-decided td") == []
    if len(files) > 1:
        other = claims.locator("div.other-machines table")
        assert other.count() == 1, f"{name}: no other machines beside the claims table"
        header = [t.strip() for t in other.locator("th").all_inner_texts()]
        assert header[1:] == column_names(files), header
        assert re.search(r"HELD \d[\d.]*x \[", other.inner_text()), "no magnitude"
    SHOTS.mkdir(parents=True, exist_ok=True)
    claims.screenshot(path=str(SHOTS / f"claims-{Path(name).name}-{width}.png"))
    page.close()


@pytest.mark.parametrize("name", ["book/01_dataloader_seeding", "book/04_mixed_precision"])
def test_the_tip_names_claims_in_words_not_keys(name, server, browser):
    page = browser.new_page(viewport=READ_WIDTHS["desktop"])
    page.goto(server + name + ".html", wait_until="load")
    tip = page.locator(".bd-article div.admonition.tip").inner_text()
    page.close()
    assert not re.search(r"(?:held here|undecided): [a-z0-9]+(?:-[a-z0-9]+)+", tip), tip


def squashed(text: str) -> str:
    """Text without any whitespace: the PDF's outline loses or doubles spaces at line breaks."""
    return "".join(words(text).split())


def test_whole_book_pdf_has_every_page_title_and_figure():
    """Issue 31: one PDF for offline readers, printed from the book as built, linked from it."""
    pdf = HTML / PDF_NAME
    assert pdf.is_file(), f"no {pdf.relative_to(ROOT)}: `make pdf` prints it"
    # printed from the single-page build, before the HTML build (so the intro links it)
    single = SINGLEHTML
    assert single.is_file(), f"no {single.relative_to(ROOT)}: `make pdf` builds it first"
    assert pdf.stat().st_mtime >= single.stat().st_mtime, "PDF older than the book it prints"
    facts = pdf_facts(pdf)
    pages = toc_pages()
    sources = {name: source_facts(name) for name in pages}
    # each chapter runs to dozens of pages; fewer than two per book page is a cut book
    assert facts.pages >= 2 * len(pages), f"{facts.pages} pages for {len(pages)} book pages"
    outline = [squashed(t) for t in facts.outline]
    found = []
    for name, source in sources.items():
        title = squashed(source["title"])
        hits = [i for i, t in enumerate(outline) if title in t]
        assert hits, f"{name}: title {source['title']!r} not in the PDF's outline"
        found.append(hits)
    figures = [fig for source in sources.values() for fig in source["figures"]]
    alts = [squashed(a) for a in facts.alt_texts]
    assert len(alts) >= len(figures), f"{len(alts)} figures in the PDF, {len(figures)} in the book"
    for fig in figures:
        assert squashed(fig["alt"]) in alts, f"figure missing from the PDF: {fig['alt'][:60]!r}"
    assert facts.images > 0, "no raster image printed (PNG figures missing)"
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert f"../{PDF_NAME}" in intro, "book/intro.md does not link the PDF"


def test_issues_button_opens_the_template_chooser_on_every_page():
    """Issue 31: the README says the site's issues button leads to the templates."""
    for name in toc_pages():
        html = (HTML / f"{name}.html").read_text(encoding="utf-8")
        assert "/issues/new/choose" in html, f"{name}: no issues button to the chooser"
        assert "/issues/new?" not in html, f"{name}: an issues button opens a blank issue"


# Issue 43: the first screen of each chapter, at a desktop's and a phone's width.
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
STAMP = re.compile(
    r"^Executed \d{4}-\d\d-\d\d with torch \d+\.\d+\.\d+\S* \(\S+ build\), Python \S+$"
)
#: How much of the recipe's code the screen after the tip shows, at least (px).
RECIPE_SHOWN = {"desktop": 100, "phone": 20}
#: Chapters whose first screens are kept as pictures (_build/screenshots/first-screen-*.png).
FIRST_SCREEN_SHOTS = ("book/01_dataloader_seeding", "book/07_quantization")


def chapter_pages() -> list[str]:
    return [name for name in toc_pages() if (ROOT / f"{name}.ipynb").exists()]


def box(page, selector: str) -> dict:
    found = page.locator(selector).first
    assert found.count(), f"nothing matches {selector}"
    return found.bounding_box()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", chapter_pages())
def test_chapter_first_screen_title_stamp_tip_and_recipe(name, width, server, browser):
    """Under the title the executed date and torch release; the recipe's code within half a
    screen after the tip; the title at most a quarter of the screen; the edit button on main."""
    viewport = WIDTHS[width]
    page = browser.new_page(viewport=viewport)
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(server) else r.abort())
    page.goto(server + name + ".html", wait_until="load")
    title, tip = box(page, ".bd-article h1"), box(page, ".bd-article div.admonition.tip")
    stamp = page.locator(".bd-article p.chapter-stamp")
    assert stamp.count() == 1, f"{name}: no executed-date line under the title"
    assert STAMP.match(stamp.inner_text().strip()), stamp.inner_text()
    line = stamp.bounding_box()
    assert title["y"] + title["height"] <= line["y"] + 1 and line["y"] < tip["y"]
    assert title["height"] <= 0.25 * viewport["height"], (
        f"{name} ({width}): the title fills {title['height']:.0f} of {viewport['height']} px"
    )
    # the screen that starts where the tip ends shows the recipe's code: its first line on a
    # phone, at least RECIPE_SHOWN px of it on a desktop
    recipe = box(page, ".bd-article div.cell.tag_recipe")
    gap = recipe["y"] - (tip["y"] + tip["height"])
    shown = RECIPE_SHOWN[width]
    assert 0 <= gap <= viewport["height"] - shown, (
        f"{name} ({width}): the recipe's code starts {gap:.0f} px below the tip, "
        f"{viewport['height'] - gap:.0f} px of it on the screen after the tip (< {shown})"
    )
    edit = page.locator("a.btn-source-edit-button").first.get_attribute("href")
    assert edit.endswith(f"/edit/main/{name}.ipynb"), edit
    if name in FIRST_SCREEN_SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"first-screen-{Path(name).name}-{width}.png"))
    page.close()


def test_every_page_has_a_description_opengraph_and_is_in_the_sitemap():
    sitemap = (HTML / "sitemap.xml").read_text(encoding="utf-8")
    for name in toc_pages():
        html = (HTML / f"{name}.html").read_text(encoding="utf-8")
        for tag in ('name="description"', 'property="og:title"', 'property="og:description"'):
            found = re.search(rf'<meta {tag} content="([^"]+)"', html)
            assert found and len(found.group(1)) > 10, f"{name}: no {tag}"
        url = re.search(r'<meta property="og:url" content="([^"]+)"', html).group(1)
        assert url.endswith(f"/{name}.html") and f"<loc>{url}</loc>" in sitemap, name
    for name in chapter_pages():  # a chapter's description is its tip
        html = (HTML / f"{name}.html").read_text(encoding="utf-8")
        described = re.search(r'<meta name="description" content="([^"]+)"', html).group(1)
        assert not described.startswith("Executed"), f"{name}: {described[:60]}"


def test_the_pdf_link_is_shown_only_where_the_pdf_exists(server):
    intro = toc_pages()[0]
    status, html = fetch(server + intro + ".html")
    assert status == 200
    links = re.findall(r'href="([^"]*\.pdf)"', html)
    if (HTML / PDF_NAME).is_file():
        assert links, "the PDF exists but the intro does not link to it"
        for link in links:
            assert fetch(urljoin(server + intro + ".html", link))[0] == 200, link
    else:
        assert not links, f"a link to a PDF that was not built: {links}"


def test_a_failure_reason_is_printed_whole_on_the_results_page():
    html = (HTML / "book" / "results.html").read_text(encoding="utf-8")
    assert not re.search(r"raised:\s*(;|</td>|<)", html), "a failure reason cut at 'raised:'"
