"""Deprecation canary: what in the book will break on the next torch?

    python -m scripts.release.deprecation_canary [NOTEBOOK ...]  (default: every chapter)

Runs the unit tests and every chapter notebook with ``DeprecationWarning`` and
``FutureWarning`` turned into errors (``PYTHONWARNINGS`` for the kernels, ``-W`` for
pytest). Notebooks run from an in-memory copy, so stored outputs are never touched; every
cell runs even after an error. It lists each cell that raised one of those warnings, with
the first line of the message, and exits 1 if there is any. Optional: it is not part of
``make test``, because a deprecation is a warning about the *next* torch, not a failure
of this one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from scripts.book.find_notebooks import ROOT, notebooks_from_args

CATEGORIES = ("DeprecationWarning", "FutureWarning")
WARNOPTIONS = ",".join(f"error::{c}" for c in CATEGORIES)


def canary_notebook(path: Path) -> list[str]:
    """Execute a copy of ``path`` with deprecations as errors; return one line per hit."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # the executed copy stays in memory; the file on disk is not written
    hits = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and out.get("ename") in CATEGORIES:
                first = (out.get("evalue") or "").strip().splitlines()[:1]
                hits.append(f"{path.name} cell {i}: {out['ename']}: {first[0] if first else ''}")
    return hits


def main(argv: list[str]) -> int:
    os.environ["PYTHONWARNINGS"] = WARNOPTIONS
    paths = notebooks_from_args(argv)
    unit = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "tests",
            "--deselect",
            "tests/test_book_browser.py",
            *[x for c in CATEGORIES for x in ("-W", f"error::{c}")],
        ],
        cwd=ROOT,
    )
    hits = (
        []
        if unit.returncode == 0
        else ["unit tests: failed with deprecations as errors (see above)"]
    )
    for path in paths:
        print(f"canary: {path.name} ...", flush=True)
        hits += canary_notebook(path)
    print()
    if not hits:
        print("canary: no DeprecationWarning or FutureWarning raised: ready for the next torch")
        return 0
    print(f"canary: {len(hits)} place(s) will break when these deprecations become errors:")
    for line in hits:
        print(f"  {line}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
