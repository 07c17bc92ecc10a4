"""The one rule for finding the book's pages and chapter notebooks: ``_toc.yml``.

Every script in ``scripts/`` and every test that needs "the chapters" asks this module, so a
new chapter counts everywhere as soon as it is listed in the table of contents (and a notebook
under ``book/`` that the table of contents forgets is reported by the audit, not skipped
silently).

    toc_pages()            every page of the book, in reading order ("book/intro", ...)
    chapter_notebooks()    the pages that are notebooks, as paths, in reading order
    notebooks_from_args()  command-line arguments as notebook paths (default: every chapter)
    unlisted_notebooks()   notebooks under book/ that _toc.yml does not list
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def toc_pages(root: Path = ROOT) -> list[str]:
    """The pages of ``_toc.yml`` in reading order, without suffix (e.g. ``"book/intro"``).

    Walks the root page and every ``file:`` entry, at any depth (parts, chapters, sections).

    Raises:
        ValueError: if ``_toc.yml`` is missing, not YAML, or names no root page.
    """
    path = root / "_toc.yml"
    try:
        toc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"find_notebooks: cannot read {path}: {exc}") from exc
    if not isinstance(toc, dict) or not toc.get("root"):
        raise ValueError(f"find_notebooks: {path} names no root page")
    pages = [str(toc["root"])]

    def walk(node) -> None:
        if isinstance(node, dict):
            if "file" in node:
                pages.append(str(node["file"]))
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [p.removesuffix(".ipynb").removesuffix(".md") for p in pages]


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks of ``_toc.yml``, in reading order (pages that are ``.ipynb`` files)."""
    paths = [root / f"{page}.ipynb" for page in toc_pages(root)]
    return [p for p in paths if p.is_file()]


def unlisted_notebooks(root: Path = ROOT) -> list[Path]:
    """Notebooks under ``book/`` that ``_toc.yml`` does not list (never built, never linked)."""
    listed = {p.resolve() for p in chapter_notebooks(root)}
    found = sorted(
        p
        for p in (root / "book").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts and p.resolve() not in listed
    )
    return found


def notebooks_from_args(args: Sequence[str], root: Path = ROOT) -> list[Path]:
    """Notebook paths named on a command line, or every chapter when none is named.

    Raises:
        FileNotFoundError: if a named notebook does not exist.
        ValueError: if no notebook is named and ``_toc.yml`` lists none.
    """
    if args:
        paths = [Path(a).resolve() for a in args]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"no such notebook: {', '.join(missing)}")
        return paths
    paths = chapter_notebooks(root)
    if not paths:
        raise ValueError(f"{root / '_toc.yml'} lists no chapter notebook")
    return paths
