"""The built HTML book, loaded page by page in headless Chromium (issue: publishing).

For every page in ``_toc.yml`` this checks what a reader would notice: the page renders its
title, every code cell's input and output and every figure (images actually decoded), and
no internal link or image points at something missing. A full-page screenshot of each page
is saved under ``_build/screenshots/``.

Needs the built book (``make test`` builds it first) and Chromium (Debian's ``chromium``,
installed by ``make browser-deps``); without either, the tests skip and say why.
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

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.skipif(not (HTML / "index.html").is_file(),
                       reason="the HTML book is not built: `make book` (make test builds it first)"),
    pytest.mark.skipif(CHROMIUM is None,
                       reason="Chromium is not installed: `make browser-deps` installs Debian's chromium"),
]


def toc_pages() -> list[str]:
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    names = re.findall(r"^root: (\S+)\s*$", toc, flags=re.M)
    names += re.findall(r"^\s*- file: (\S+)\s*$", toc, flags=re.M)
    return names


def plain(markdown_title: str) -> str:
    """A heading as the browser shows it: without inline-code backticks and bold markers."""
    return re.sub(r"`|\*\*", "", markdown_title).strip()


def source_facts(name: str) -> dict:
    """Title, code cells, outputs and figures the page must show, read from its source."""
    nb_path = ROOT / f"{name}.ipynb"
    if not nb_path.exists():
        text = (ROOT / f"{name}.md").read_text(encoding="utf-8")
        return {"title": plain(re.search(r"^# (.+)$", text, flags=re.M).group(1)),
                "code": 0, "outputs": 0, "images": 0}
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    title, code, outputs, images = None, 0, 0, 0
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown" and title is None:
            m = re.search(r"^# (.+)$", src, flags=re.M)
            title = plain(m.group(1)) if m else None
        if cell["cell_type"] == "code" and src.strip():
            code += 1
            outputs += bool(cell.get("outputs"))
            images += sum(any(k.startswith("image/") for k in o.get("data", {}))
                          for o in cell.get("outputs", []))
    return {"title": title, "code": code, "outputs": outputs, "images": images}


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
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@functools.lru_cache(maxsize=None)
def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


@pytest.mark.parametrize("name", toc_pages())
def test_page_renders_everything(name, server, browser):
    facts = source_facts(name)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    # Only this server is reachable; anything else (CDNs) is refused at once, not waited for.
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(server)
               else route.abort())
    url = urljoin(server, f"{name}.html")
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url} did not load"

    h1 = page.locator("main h1").first.inner_text().strip().rstrip("#").strip()
    assert h1 == facts["title"], f"{name}: title {h1!r}, source says {facts['title']!r}"

    assert page.locator("div.cell_input").count() == facts["code"], f"{name}: code cells missing"
    assert page.locator("div.cell_output").count() == facts["outputs"], f"{name}: outputs missing"
    shown = page.locator("div.cell_output img").count()
    assert shown == facts["images"], f"{name}: {shown} figures shown, notebook has {facts['images']}"

    broken = page.eval_on_selector_all(
        "img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)")
    assert broken == [], f"{name}: images that did not load: {broken}"

    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    for href in sorted(set(hrefs)):
        if not href.startswith(server):
            continue
        target, fragment = urldefrag(href)
        status, body = fetch(target)
        assert status == 200, f"{name}: broken internal link {urlparse(href).path} ({status})"
        if fragment and target.endswith(".html"):
            assert f'id="{fragment}"' in body, f"{name}: link to missing anchor #{fragment} in {target}"

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{Path(name).name}.png"), full_page=True)
    page.close()
