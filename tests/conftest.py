"""Fixtures shared by the tests: the repository root, the sanitize file, scratch notebooks.

- ``repo_root``: the repository's root directory.
- ``sanitize``: a function applying ``nbval_sanitize.cfg`` to text exactly as nbval does (each
  ``regex:``/``replace:`` pair in file order), to test that printed lines sanitize to
  machine-independent text.
- ``make_notebook``: writes a small notebook (``nbformat`` v4) from cell specs.
- ``one_thread``: runs a test with one intra-op thread (tiny models; see its docstring).
- ``tmp_book``: a scratch repository root (``_config.yml``, ``_toc.yml``, ``book/``) whose
  chapters are made with ``make_notebook``; the scripts take it as their ``root``.
- ``make_limits``: a valid ``tricks_helpers.limits.Limits``, fields changed by keyword.
- ``make_claim``: a valid claim record (``tricks_helpers.claims``), fields changed by keyword.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def one_thread():
    """Run the test on one intra-op thread, like each torchrun worker, and restore the count.

    Tiny models gain nothing from a second thread, and on a loaded machine a pool of two
    threads waits at every parallel operator for the thread the OS put aside, which makes such
    tests many times slower without testing anything.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def make_limits() -> Callable[..., object]:
    """``make_limits(**change)``: ``probe_inputs.GOOD_LIMITS`` (the input probe's valid case, a
    2-core machine) with the fields in ``change`` replaced, as a ``limits.Limits``."""
    from scripts.probes.inputs import GOOD_LIMITS
    from tricks_helpers import limits

    return lambda **change: limits.Limits(**{**GOOD_LIMITS, **change})


#: A valid claim record, as a chapter's claims file and a results file hold it.
CLAIM = {
    "chapter": "01_c",
    "key": "k",
    "advice": "a",
    "condition": "c",
    "status": "HELD",
    "evidence": "e",
    "measured": False,
}


@pytest.fixture(scope="session")
def make_claim() -> Callable[..., dict]:
    """``make_claim(**change)``: :data:`CLAIM` with the fields in ``change`` replaced."""
    return lambda **change: {**CLAIM, **change}


@pytest.fixture(scope="session")
def sanitize() -> Callable[[str], str]:
    cfg = (ROOT / "nbval_sanitize.cfg").read_text(encoding="utf-8")
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", cfg, flags=re.M)
    assert pairs, "nbval_sanitize.cfg holds no regex/replace pairs"

    def apply(text: str) -> str:
        for regex, repl in pairs:
            text = re.sub(regex, repl, text)
        return text

    return apply


def _cell(spec) -> nbformat.NotebookNode:
    """A cell from a spec: a markdown string ``"# Title"`` (starts with ``#`` + space or is
    prose) or a dict ``{"source": ..., "outputs": [...], "tags": [...], "metadata": {...},
    "count": N}`` for a code cell. Output items are strings (stdout) or ready output dicts.
    """
    if isinstance(spec, str):
        return nbformat.v4.new_markdown_cell(spec)
    metadata = dict(spec.get("metadata", {}))
    if spec.get("tags"):
        metadata["tags"] = list(spec["tags"])
    cell = nbformat.v4.new_code_cell(spec.get("source", "x = 1"), metadata=metadata)
    cell.execution_count = spec.get("count")
    outputs = []
    for out in spec.get("outputs", []):
        if isinstance(out, str):
            outputs.append(nbformat.v4.new_output("stream", name="stdout", text=out))
        else:
            outputs.append(nbformat.from_dict(out))
    cell.outputs = outputs
    return cell


@pytest.fixture
def make_notebook(tmp_path) -> Callable[..., Path]:
    """``make_notebook(path_or_name, cells, number=True)`` -> path of the written notebook.

    With ``number=True`` code cells whose spec has no ``count`` key are numbered 1, 2, ...
    """

    def make(path: str | Path, cells: list, number: bool = True) -> Path:
        path = Path(path)
        if not path.is_absolute():
            path = tmp_path / path
        path.parent.mkdir(parents=True, exist_ok=True)
        nb = nbformat.v4.new_notebook()
        nb.cells = [_cell(c) for c in cells]
        if number:
            n = 0
            for spec, cell in zip(cells, nb.cells):
                if cell.cell_type == "code" and "count" not in spec:
                    n += 1
                    cell.execution_count = n
        nbformat.write(nb, path)
        return path

    return make


@pytest.fixture
def tmp_book(tmp_path, make_notebook) -> Callable[..., Path]:
    """``tmp_book({"01_a": cells, ...}, release="v1.0")`` -> a scratch repository root.

    Its ``_toc.yml`` lists ``book/intro`` then the given chapters in order (plus
    ``book/results``); its ``_config.yml`` names a GitHub repository and the release tag as
    ``repository.branch``, the one ref (see scripts/release/colab_cell.py).
    """

    def make(
        chapters: dict[str, list], release: str = "v1.0", url: str = "https://github.com/me/book"
    ) -> Path:
        root = tmp_path / "repo"
        (root / "book").mkdir(parents=True, exist_ok=True)
        (root / "book" / "intro.md").write_text("# Intro\n", encoding="utf-8")
        (root / "_config.yml").write_text(
            f"repository:\n  url: {url}\n  branch: {release}\n", encoding="utf-8"
        )
        files = "".join(f"      - file: book/{name}\n" for name in chapters)
        (root / "_toc.yml").write_text(
            "format: jb-book\nroot: book/intro\nparts:\n  - caption: All\n    chapters:\n"
            + files
            + "      - file: book/results\n",
            encoding="utf-8",
        )
        for name, cells in chapters.items():
            make_notebook(root / "book" / f"{name}.ipynb", cells)
        return root

    return make
