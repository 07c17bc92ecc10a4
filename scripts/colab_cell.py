"""Stamp the Colab set-up cell into every chapter notebook, from one configured place.

    python scripts/colab_cell.py            update the chapters of _toc.yml in place
    python scripts/colab_cell.py --check    exit 1 if any chapter's cell is missing or stale

The install source is ``repository.url`` and ``repository.release`` in ``_config.yml`` (the
url is the same setting the book's Colab launch buttons use; the release is a git tag of it,
so a reader installs a fixed version, never a moving branch). The cell is the first code cell
of each chapter, tagged ``colab-setup`` (found by this script) and ``remove-cell`` (Jupyter
Book leaves it off the rendered page; Colab still runs it). In Colab it pip-installs
``tricks_helpers[book]`` at that release, keeps Colab's own torch (the package asks only for
``torch>=2.4``), bounds ``torchao`` to the releases known to work with that torch
(:data:`TORCHAO_FOR_TORCH`), and when pip fails it says plainly what failed and what to do
instead of showing pip's traceback. Where the package is already installed (``make test``,
your venv) it installs nothing and prints the same line as always, so re-stamping needs no
re-execution of the notebooks.

Idempotent: a second run changes nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
import yaml

from find_notebooks import ROOT, chapter_notebooks

TAG = "colab-setup"
#: Jupyter Book (myst-nb) drops a cell with this tag from the page, input and output.
HIDE_TAG = "remove-cell"
RELEASE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

#: torchao releases known to work with each torch release (major.minor), newest rows last.
#: 2.13 and 2.14: this book's chapter 07 executed with torchao 0.18.0 (``make test`` on
#: torch 2.13.0, ``make newest`` on 2.14.1). 2.8 to 2.12: the torch releases torchao's own
#: binaries were built for (its compatibility table, torchao/__init__.py; 0.17 and 0.18 need
#: torch >= 2.11). Any other torch: the cell says so and installs torchao unbounded.
TORCHAO_FOR_TORCH = {
    "2.8": "torchao>=0.13,<0.14.1",
    "2.9": "torchao>=0.14.1,<0.16",
    "2.10": "torchao>=0.16,<0.17",
    "2.11": "torchao>=0.17,<0.19",
    "2.12": "torchao>=0.17,<0.19",
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
        lines = [x.strip() for x in (done.stderr + done.stdout).splitlines() if x.strip()]
        said = next((x for x in lines if x.startswith(("fatal:", "ERROR:"))), None)
        said = said or next((x for x in lines[::-1] if not x.startswith("note:")), "nothing")
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
    """``(url, release)`` from ``_config.yml``'s ``repository`` section.

    Raises:
        ValueError: if ``repository.url`` is missing or not an https URL, or
            ``repository.release`` is missing or not a plain tag name.
    """
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    repo = config.get("repository") or {}
    url = str(repo.get("url", "")).rstrip("/")
    release = str(repo.get("release", "")).strip()
    if not url.startswith("https://"):
        raise ValueError(f"{config_path.name}: repository.url must be an https URL, got {url!r}")
    if not RELEASE_RE.match(release):
        raise ValueError(
            f"{config_path.name}: repository.release must be a release tag of "
            f"repository.url (e.g. v0.1.0), got {release!r}"
        )
    return url, release


def cell_source(config_path: Path = ROOT / "_config.yml") -> str:
    """The set-up cell's source for the repository and release configured in ``_config.yml``.

    Raises:
        ValueError: see :func:`read_config`.
    """
    url, release = read_config(config_path)
    torchao = "\n".join(f'    "{k}": "{v}",' for k, v in TORCHAO_FOR_TORCH.items())
    return TEMPLATE.format(url=url, release=release, torchao=torchao, local_line=LOCAL_LINE)


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
    source = cell_source(root / "_config.yml")
    stale = []
    for path in chapter_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        if stamp(nb, source):
            stale.append(path.name)
            if not args.check:
                nbformat.write(nb, path)
    if args.check and stale:
        print(
            f"colab_cell: stale set-up cell in {', '.join(stale)}; run scripts/colab_cell.py",
            file=sys.stderr,
        )
        return 1
    verb = "up to date" if not stale else "stamped: " + ", ".join(stale)
    print(f"colab_cell: {verb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
