"""Stamp the Colab set-up cell and the "Open in Colab" badge into every chapter, from one ref.

    python -m scripts.release.colab_cell          update the chapters of _toc.yml in place
    python -m scripts.release.colab_cell --check  exit 1 if a chapter's cell or badge is stale

One configured ref: ``repository.branch`` in ``_config.yml``, a release tag such as ``v0.1.0``.
Jupyter Book's Colab launch button opens ``<colab_url>/github/<org>/<repo>/blob/<branch>/<page>``
(sphinx-book-theme), the badge this script writes opens the same URL (:func:`colab_url`), and
the set-up cell installs ``tricks_helpers`` from ``repository.url`` at the same ref: the notebook
a reader opens and the helpers it installs come from one release, never from a moving branch.
``make release-check`` checks that the ref is ``v`` + the package version.

The set-up cell is the first code cell of each chapter, tagged ``colab-setup`` (found by this
script) and ``remove-cell`` (Jupyter Book leaves it off the rendered page; Colab still runs
it). In Colab it pip-installs ``tricks_helpers[book]`` at that ref, keeps Colab's own torch
(the package asks only for ``torch>=2.4``), bounds ``torchao`` to the releases known to work
with that torch (:data:`TORCHAO_FOR_TORCH`), and when pip fails it shows pip's real reason
(``pip_reason.pip_reason``, copied into the cell) and what to do. Where the package is already
installed (``make test``, your venv) it installs nothing and prints the same line as always, so
re-stamping needs no re-execution of the notebooks (only the cell's source changes).

The badge is a markdown cell before the title, tagged ``colab-badge`` and ``remove-cell``: it
shows on GitHub and in Colab, and the built site (which has the launch button, and loads no
image from another host) leaves it out.

Idempotent: a second run changes nothing.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

import nbformat
import yaml

from scripts.book.find_notebooks import ROOT, chapter_notebooks
from scripts.release.pip_reason import pip_reason

TAG = "colab-setup"
#: The tag of the "Open in Colab" badge cell.
BADGE_TAG = "colab-badge"
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
#: Jupyter Book (myst-nb) drops a cell with this tag from the page, input and output.
HIDE_TAG = "remove-cell"
RELEASE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

#: torchao releases known to work with each torch release (major.minor), newest rows last.
#: 2.13 and 2.14: this book's chapter 07 executed with torchao 0.18.0 (``make test`` on
#: torch 2.13.0, ``make newest`` on 2.14.1). 2.11 and 2.12: torchao 0.18 loads its C++
#: extensions from torch 2.11 on (torchao/__init__.py), and it is the only release with every
#: name and keyword chapter 07 uses (``scripts/compat/torchao_api.json``). 2.8 to 2.10: the torchao
#: releases built for them (its compatibility table), which lack
#: ``PrototypeInt4WeightOnlyConfig`` (0.18 on): chapter 07 runs every other section there and
#: skips its int4 rows, with one ``[skipped]`` line naming the release they need
#: (``tricks_helpers.quantization.TORCHAO_NEEDED``); with 0.13 (the 2.8 row) it also skips its
#: appendix's probe of configs without a CPU path (``int4_packing_format`` is 0.14 on).
#: Any other torch: the cell says so and installs torchao unbounded.
TORCHAO_FOR_TORCH = {
    "2.8": "torchao>=0.13,<0.14.1",
    "2.9": "torchao>=0.14.1,<0.16",
    "2.10": "torchao>=0.16,<0.17",
    "2.11": "torchao>=0.18,<0.19",
    "2.12": "torchao>=0.18,<0.19",
    "2.13": "torchao>=0.18,<0.19",
    "2.14": "torchao>=0.18,<0.19",
}

#: What the cell prints where the package is already installed (compared by nbval).
LOCAL_LINE = "tricks_helpers is already installed: nothing to install"

TEMPLATE = """\
# Colab set-up: installs this book's helpers ({release}) if they are missing, keeping your
# torch. A no-op where tricks_helpers is installed (a local checkout, CI).
import importlib.metadata
import importlib.util
import subprocess
import sys

REPO = "{url}"
RELEASE = "{release}"
# torchao releases known to work with each torch release (scripts/colab_cell.py says why)
TORCHAO = {{
{torchao}
}}


{pip_reason}


if importlib.util.find_spec("tricks_helpers") is None:
    pkgs = [f"tricks_helpers[book] @ git+{{REPO}}@{{RELEASE}}"]
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "none"  # pip installs one: the package asks for torch>=2.4
    torch_minor = ".".join(torch_version.split("+")[0].split(".")[:2])
    if torch_minor in TORCHAO:
        pkgs.append(TORCHAO[torch_minor])
    else:
        print(
            f"note: no torchao release is known to work with torch {{torch_version}}; "
            "installing the newest (chapter 07's torchao cells may fail)"
        )
    pip = [sys.executable, "-m", "pip", "install", "-q", *pkgs]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode != 0:
        said = pip_reason(done.stderr + "\\n" + done.stdout)
        raise RuntimeError(
            f"Could not install the book's helpers (release {{RELEASE}} of {{REPO}}).\\n"
            f"pip said: {{said}}\\n"
            "What to do: check that this runtime reaches the internet and that the release "
            "exists, then run this cell again; or install them yourself:\\n"
            "  pip install " + " ".join(repr(p) for p in pkgs)
        ) from None
    print(f"installed tricks_helpers {{RELEASE}} from {{REPO}}; torch {{torch_version}} kept")
else:
    print("{local_line}")"""


def read_config(config_path: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """``(url, ref)`` from ``_config.yml``: ``repository.url`` and ``repository.branch``.

    ``repository.branch`` is the one ref: Jupyter Book's launch buttons open the notebooks of
    it, and the set-up cell installs the helpers from it. It must be a release tag.

    Raises:
        ValueError: if ``repository.url`` is missing or not an https URL, if
            ``repository.branch`` is missing or not a plain tag name, or if the retired
            ``repository.release`` key is still set (a second ref that could drift).
    """
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    repo = config.get("repository") or {}
    url = str(repo.get("url", "")).rstrip("/")
    ref = str(repo.get("branch", "")).strip()
    if not url.startswith("https://"):
        raise ValueError(f"{config_path.name}: repository.url must be an https URL, got {url!r}")
    if "release" in repo:
        raise ValueError(
            f"{config_path.name}: repository.release is retired; the one ref is "
            "repository.branch (the launch buttons' ref), set it to the release tag"
        )
    if not RELEASE_RE.match(ref):
        raise ValueError(
            f"{config_path.name}: repository.branch must be a release tag of "
            f"repository.url (e.g. v0.1.0), got {ref!r}"
        )
    return url, ref


def colab_url(config_path: Path, notebook: str) -> str:
    """The Colab URL of a notebook at the configured ref, as Jupyter Book's launch button makes it.

    ``<launch_buttons.colab_url>/github/<org>/<repo>/blob/<repository.branch>/<path>``, with
    ``<path>`` the notebook's path under ``repository.path_to_book``.

    Args:
        config_path: the book's ``_config.yml``.
        notebook: the notebook's path relative to the book's root, e.g.
            ``"book/01_dataloader_seeding.ipynb"``.

    Raises:
        ValueError: see :func:`read_config`; also if ``repository.url`` is not a GitHub
            repository (Colab opens notebooks from GitHub only).
    """
    url, ref = read_config(config_path)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?", url)
    if match is None:
        raise ValueError(f"{config_path.name}: Colab opens GitHub repositories only, got {url!r}")
    base = str((config.get("launch_buttons") or {}).get("colab_url", "")).rstrip("/")
    base = base or "https://colab.research.google.com"
    book = str((config.get("repository") or {}).get("path_to_book", "") or "").strip("/")
    path = f"{book}/{notebook}" if book else notebook
    return f"{base}/github/{match.group(1)}/{match.group(2)}/blob/{ref}/{path}"


def badge_source(config_path: Path, notebook: str) -> str:
    """The markdown of the "Open in Colab" badge of one notebook (see :func:`colab_url`)."""
    return f"[![Open in Colab]({BADGE_IMAGE})]({colab_url(config_path, notebook)})"


def cell_source(config_path: Path = ROOT / "_config.yml") -> str:
    """The set-up cell's source for the repository and ref configured in ``_config.yml``.

    Raises:
        ValueError: see :func:`read_config`.
    """
    url, ref = read_config(config_path)
    torchao = "\n".join(f'    "{k}": "{v}",' for k, v in TORCHAO_FOR_TORCH.items())
    return TEMPLATE.format(
        url=url,
        release=ref,
        torchao=torchao,
        pip_reason=inspect.getsource(pip_reason).rstrip(),
        local_line=LOCAL_LINE,
    )


def stamp_badge(nb: nbformat.NotebookNode, source: str) -> bool:
    """Make the notebook's first cell the ``colab-badge`` markdown cell holding ``source``.

    The cell is tagged ``colab-badge`` and ``remove-cell`` (GitHub and Colab show it; the built
    site leaves it out). An existing badge cell is updated and moved first.

    Returns:
        True if the notebook changed.
    """
    found = [c for c in nb.cells if BADGE_TAG in c.get("metadata", {}).get("tags", [])]
    tags = [BADGE_TAG, HIDE_TAG]
    if (
        len(found) == 1
        and nb.cells[0] is found[0]
        and found[0].cell_type == "markdown"
        and found[0].source == source
        and found[0].metadata.get("tags") == tags
    ):
        return False
    nb.cells = [c for c in nb.cells if not any(c is f for f in found)]
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(source, metadata={"tags": tags}))
    return True


def stamp(nb: nbformat.NotebookNode, source: str) -> bool:
    """Make the notebook's ``colab-setup`` cell hold ``source`` and be hidden on the page.

    The cell is created as the first code cell when missing; its tags gain ``remove-cell``.

    Returns:
        True if the notebook changed.
    """
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if TAG in tags:
            changed = cell.cell_type != "code" or cell.source != source or HIDE_TAG not in tags
            if changed:
                cell.cell_type, cell.source = "code", source
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
                cell.metadata["tags"] = tags + ([HIDE_TAG] if HIDE_TAG not in tags else [])
            return changed
    new = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG, HIDE_TAG]})
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, new)
    return True


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    config_path = root / "_config.yml"
    source = cell_source(config_path)
    stale = []
    for path in chapter_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        badge = badge_source(config_path, path.relative_to(root).as_posix())
        if any([stamp_badge(nb, badge), stamp(nb, source)]):
            stale.append(path.name)
            if not args.check:
                nbformat.write(nb, path)
    if args.check and stale:
        print(
            f"colab_cell: stale set-up cell or badge in {', '.join(stale)}; "
            "run scripts/release/colab_cell.py",
            file=sys.stderr,
        )
        return 1
    verb = "up to date" if not stale else "stamped: " + ", ".join(stale)
    print(f"colab_cell: {verb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
