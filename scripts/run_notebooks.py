"""Re-execute the book's notebooks top to bottom, in place, and report each one's time.

    python scripts/run_notebooks.py [NOTEBOOK ...]     (default: every book/*.ipynb)

Uses the current Python environment's kernel (like ``pytest --nbval-current-env``), runs
each notebook in its own directory, and stops at the first failing cell, leaving the
notebook on disk untouched in that case. This is the only way stored outputs are made.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    tmp = path.with_suffix(".ipynb.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(path)
    return elapsed


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or sorted((ROOT / "book").glob("[0-9]*.ipynb"))
    if not paths:
        print("run_notebooks: no notebooks found", file=sys.stderr)
        return 1
    for p in paths:
        if not p.is_file():
            print(f"run_notebooks: no such notebook: {p}", file=sys.stderr)
            return 1
    for p in paths:
        print(f"executing {p.name} ...", flush=True)
        seconds = execute(p)
        print(f"  done in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
