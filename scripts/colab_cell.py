"""Stamp the Colab set-up cell into every chapter notebook, from one configured place.

    python scripts/colab_cell.py            update book/NN_*.ipynb in place
    python scripts/colab_cell.py --check    exit 1 if any notebook's cell is missing or stale

The install source is ``repository.url`` and ``repository.branch`` in ``_config.yml`` (the
same setting the book's Colab launch buttons use). The cell, tagged ``colab-setup``, is the
first code cell of each chapter: in Colab it pip-installs ``tricks_helpers`` with the extras
the chapters use, keeping Colab's own torch (the package asks only for ``torch>=2.4``), and
says so; where the package is already installed (``make test``, your venv) it installs
nothing and says that instead. Re-execute the notebooks after stamping.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
TAG = "colab-setup"

TEMPLATE = '''\
# Colab set-up: installs the book's helpers if they are missing, keeping your torch.
# A no-op where tricks_helpers is installed (a local checkout, CI).
import importlib.util, subprocess, sys
REPO = "{url}"
if importlib.util.find_spec("tricks_helpers") is None:
    pkg = f"tricks_helpers[book] @ git+{{REPO}}@{branch}"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", pkg], check=True)
    print(f"installed tricks_helpers from {{REPO}} (your torch was kept)")
else:
    print("tricks_helpers is already installed: nothing to install")'''


def cell_source(config_path: Path = ROOT / "_config.yml") -> str:
    """The set-up cell's source for the repository configured in ``_config.yml``.

    Raises:
        ValueError: if ``repository.url`` is missing or not an https git host URL.
    """
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    repo = config.get("repository") or {}
    url, branch = str(repo.get("url", "")).rstrip("/"), str(repo.get("branch", "main"))
    if not url.startswith("https://"):
        raise ValueError(f"{config_path.name}: repository.url must be an https URL, got {url!r}")
    return TEMPLATE.format(url=url, branch=branch)


def stamp(nb: nbformat.NotebookNode, source: str) -> bool:
    """Put ``source`` in the notebook's ``colab-setup`` cell, creating it as the first code cell.

    Returns:
        True if the notebook changed.
    """
    for cell in nb.cells:
        if TAG in cell.get("metadata", {}).get("tags", []):
            if cell.source == source and cell.cell_type == "code":
                return False
            cell.cell_type, cell.source = "code", source
            return True
    new = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG]})
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, new)
    return True


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    return sorted((root / "book").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    source = cell_source()
    stale = []
    for path in chapter_notebooks():
        nb = nbformat.read(path, as_version=4)
        if stamp(nb, source):
            stale.append(path.name)
            if not args.check:
                nbformat.write(nb, path)
    if args.check and stale:
        print(f"colab_cell: stale set-up cell in {', '.join(stale)}; run scripts/colab_cell.py "
              "and re-execute those notebooks", file=sys.stderr)
        return 1
    verb = "up to date" if not stale else ("stamped (re-execute them): " + ", ".join(stale))
    print(f"colab_cell: {verb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
