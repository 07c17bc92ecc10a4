"""Every DataLoader with workers in a chapter names its start method (multiprocessing_context).

macOS, Windows and Python 3.14 on Linux do not start workers with fork by default; a chapter
whose datasets are defined in the notebook works only under fork, so it says so explicitly.
"""

from __future__ import annotations

import ast

import nbformat

from scripts.book.find_notebooks import chapter_notebooks

CALLS = {"DataLoader", "find_duplicate_samples"}


def calls_with_workers(source):
    """DataLoader calls with workers in one kernel cell. A cell magic's body (``%%writefile``:
    chapter 08's recipe script, run by torchrun as its own ``__main__``) is not the kernel's
    code, and IPython line magics are blanked."""
    if source.lstrip().startswith("%%"):
        return
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        keywords = {k.arg: k.value for k in node.keywords}
        if name == "find_duplicate_samples" or (
            name == "DataLoader"
            and "num_workers" in keywords
            and not (
                isinstance(keywords["num_workers"], ast.Constant)
                and not keywords["num_workers"].value
            )
        ):
            yield node.lineno, keywords


def test_every_loader_with_workers_passes_its_start_method(repo_root):
    checked = 0
    for path in chapter_notebooks(repo_root):
        nb = nbformat.read(path, as_version=4)
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        uses = [kw for src in sources for _, kw in calls_with_workers(src)]
        for keywords in uses:
            assert "multiprocessing_context" in keywords, f"{path.name}: a loader without it"
        if uses:
            assert any("MP_CONTEXT = " in src for src in sources), f"{path.name}: no MP_CONTEXT"
        checked += len(uses)
    assert checked >= 10, "chapters 01 and 03 start workers"
