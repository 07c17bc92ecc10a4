"""Turn nbval's ``# NBVAL_*`` comment markers into the equivalent cell tags.

    python -m scripts.release.convert_markers [NOTEBOOK ...]           convert in place
    python -m scripts.release.convert_markers --check [NOTEBOOK ...]   exit 1 if any marker is left

Default: every chapter of ``_toc.yml``. A comment marker is code the reader sees on the
rendered page (``# NBVAL_IGNORE_OUTPUT`` above a cell is noise to a reader); a cell tag does
the same for nbval and is invisible on the page. A marker line is removed from the cell's
source and its tag added to the cell's metadata; nothing else changes (outputs and execution
counts stay, so no re-execution is needed). Idempotent: a second run changes nothing.

A comment that mentions a marker but is not one nbval honours (``# NBVAL_IGNORE_OUTPUT (why)``
is ignored by nbval) is reported, not converted: converting it would change what nbval
compares. Fix those by hand (tag the cell, or delete the comment).
"""

from __future__ import annotations

import argparse
import re
import sys

import nbformat

from scripts.book.find_notebooks import notebooks_from_args

#: nbval's comment markers and the cell tags that mean the same to nbval.
MARKER_TAGS = {
    "NBVAL_IGNORE_OUTPUT": "nbval-ignore-output",
    "NBVAL_SKIP": "nbval-skip",
    "NBVAL_RAISES_EXCEPTION": "raises-exception",
    "NBVAL_CHECK_OUTPUT": "nbval-check-output",
    "PYTEST_VALIDATE_IGNORE_OUTPUT": "nbval-ignore-output",  # nbval's older spelling
}
_MENTION = re.compile(r"#.*\b(?:NBVAL|PYTEST_VALIDATE)_[A-Z_]+")


def marker_of(line: str) -> str | None:
    """The marker a source line is, as nbval reads it (a whole comment line), else None."""
    text = line.strip()
    if not text.startswith("#"):
        return None
    word = text.lstrip("#").strip()
    return word if word in MARKER_TAGS else None


def convert_cell(cell: nbformat.NotebookNode) -> tuple[bool, list[str]]:
    """Convert one code cell's marker lines into tags.

    Returns:
        ``(changed, leftovers)``: whether the cell changed, and the comment lines that mention
        a marker nbval would not honour (left as they are).
    """
    if cell.cell_type != "code":
        return False, []
    kept, tags, leftovers = [], list(cell.metadata.get("tags", [])), []
    changed = False
    for line in cell.source.splitlines(keepends=True):
        marker = marker_of(line)
        if marker is None:
            if _MENTION.search(line):
                leftovers.append(line.strip())
            kept.append(line)
            continue
        changed = True
        if MARKER_TAGS[marker] not in tags:
            tags.append(MARKER_TAGS[marker])
    if changed:
        cell.source = "".join(kept).rstrip("\n") if kept else ""
        cell.metadata["tags"] = tags
    return changed, leftovers


def convert(nb: nbformat.NotebookNode) -> tuple[list[int], list[str]]:
    """Convert every code cell; return the changed cells' indices and the leftovers."""
    changed, leftovers = [], []
    for i, cell in enumerate(nb.cells):
        did, left = convert_cell(cell)
        if did:
            changed.append(i)
        leftovers += [f"cell {i}: {line}" for line in left]
    return changed, leftovers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks (default: every chapter)")
    parser.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    try:
        paths = notebooks_from_args(args.notebooks)
    except (FileNotFoundError, ValueError) as exc:
        print(f"convert_markers: {exc}", file=sys.stderr)
        return 1
    bad = False
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        changed, leftovers = convert(nb)
        for line in leftovers:
            print(
                f"convert_markers: {path.name} {line}: not a marker nbval honours; "
                "tag the cell or delete the comment",
                file=sys.stderr,
            )
        bad |= bool(leftovers)
        if changed:
            cells = ", ".join(str(i) for i in changed)
            if args.check:
                print(
                    f"convert_markers: {path.name}: comment markers in cells {cells}",
                    file=sys.stderr,
                )
                bad = True
            else:
                nbformat.write(nb, path)
                print(f"convert_markers: {path.name}: tagged cells {cells}")
    if not bad:
        print("convert_markers: no comment markers left")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
