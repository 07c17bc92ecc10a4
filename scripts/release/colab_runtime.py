"""Give the chapters with a CUDA branch Colab's GPU-runtime metadata (``make colab``).

    python -m scripts.release.colab_runtime [NOTEBOOK ...]

Colab opens a notebook on the runtime its metadata asks for: ``"accelerator": "GPU"`` and
``"colab": {"gpuType": "T4"}`` (the free tier's GPU) at the notebook level, as Colab itself
saves them. A chapter has a CUDA branch when a code cell asks ``torch.cuda.is_available()`` or
``torch.cuda.device_count()``; those chapters get the metadata, the others are left as they
are. Only the notebook metadata changes: cells and outputs are untouched, and a notebook that
already carries it is not rewritten. ``scripts/audits/notebooks.py`` fails on a chapter with a
CUDA branch that lacks it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from scripts.book.find_notebooks import notebooks_from_args
from scripts.book.notebook_cells import stored_text

GPU_TYPE = "T4"
_CUDA_BRANCH = re.compile(r"torch\.cuda\.(?:is_available|device_count)\(\)")


def has_gpu_branch(nb: dict) -> bool:
    """True when a code cell of the notebook (a dict read from JSON) branches on CUDA."""
    return any(
        cell.get("cell_type") == "code" and _CUDA_BRANCH.search(stored_text(cell.get("source")))
        for cell in nb.get("cells", [])
    )


def has_gpu_runtime(nb: dict) -> bool:
    """True when the notebook's metadata asks Colab for a GPU runtime."""
    meta = nb.get("metadata", {})
    return meta.get("accelerator") == "GPU" and bool(meta.get("colab", {}).get("gpuType"))


def stamp(path: Path) -> bool:
    """Add the GPU-runtime metadata to ``path`` if it has a CUDA branch and lacks it.

    Returns:
        Whether the file was rewritten.
    """
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    if not has_gpu_branch(nb) or has_gpu_runtime(nb):
        return False
    meta = nb.setdefault("metadata", {})
    meta["accelerator"] = "GPU"
    meta.setdefault("colab", {})["gpuType"] = GPU_TYPE
    meta["colab"].setdefault("provenance", [])
    out = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(out, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="default: every chapter of _toc.yml")
    args = parser.parse_args(argv)
    for path in notebooks_from_args(args.notebooks):
        print(f"{path.name}: {'GPU runtime metadata added' if stamp(path) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
