"""Which torchao a compatibility venv gets for a torch release (``make compat TORCH=...``).

    python -m scripts.compat.env 2.10.0     prints the pip requirement, e.g. torchao>=0.16,<0.17

The one source is ``TORCHAO_FOR_TORCH`` in ``scripts/release/colab_cell.py``, the table the
Colab set-up cell installs from: a compat run tests what a Colab reader with that torch gets. It
is read from that file's source (:func:`torchao_table`, ``ast.literal_eval`` of the assignment,
nothing imported), so this script runs on any ``python3``, before the venv holds a package.

A release without a row (e.g. a torch newer than the table) gets ``torchao`` unbounded, exactly as
the Colab cell does (it prints a note and installs the newest); :func:`torchao_requirement` says
so through :func:`has_row`, and the compat record keeps the requirement it was built with.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

__all__ = ["COLAB_CELL", "torch_minor", "torchao_table", "has_row", "torchao_requirement"]

#: The file that holds the table (the Colab set-up cell's generator).
COLAB_CELL = Path(__file__).resolve().parents[1] / "release" / "colab_cell.py"
_TABLE_NAME = "TORCHAO_FOR_TORCH"
_RELEASE = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?([a-z]+[0-9]+)?(\+[A-Za-z0-9.]+)?$")


def torch_minor(version: str) -> str:
    """``major.minor`` of a torch version, the table's key: ``2.10.0+cu128`` gives ``2.10``.

    Raises:
        TypeError: when ``version`` is not a string.
        ValueError: when it is not a release number (``2.10``, ``2.10.0``, ``2.15.0rc1``,
            an optional ``+local`` part).
    """
    if not isinstance(version, str):
        raise TypeError(f"torch_minor: version must be a string, got {version!r}")
    if not _RELEASE.fullmatch(version):
        raise ValueError(f"torch_minor: {version!r} is not a torch release such as 2.10.0")
    return ".".join(version.split("+")[0].split(".")[:2])


def torchao_table(path: Path = COLAB_CELL) -> dict[str, str]:
    """The ``TORCHAO_FOR_TORCH`` dict assigned in ``path``, read without importing it.

    Raises:
        ValueError: when the file assigns no such dict literal, or it is not str -> str.
    """
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == _TABLE_NAME and node.value is not None:
            table = ast.literal_eval(node.value)
            if isinstance(table, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in table.items()
            ):
                return table
            raise ValueError(f"{path}: {_TABLE_NAME} is not a dict of strings")
    raise ValueError(f"{path}: no {_TABLE_NAME} = {{...}} assignment")


def has_row(version: str, table: dict[str, str] | None = None) -> bool:
    """True when the table has a row for ``version``'s ``major.minor``."""
    return torch_minor(version) in (torchao_table() if table is None else table)


def torchao_requirement(version: str, table: dict[str, str] | None = None) -> str:
    """The pip requirement for torchao beside torch ``version``: its row, else ``torchao``.

    Raises:
        TypeError, ValueError: see :func:`torch_minor`.
    """
    table = torchao_table() if table is None else table
    return table.get(torch_minor(version), "torchao")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m scripts.compat.env TORCH_RELEASE", file=sys.stderr)
        return 2
    try:
        table = torchao_table()
        requirement = torchao_requirement(args[0], table)
    except (TypeError, ValueError) as exc:
        print(f"compat_env: {exc}", file=sys.stderr)
        return 1
    if not has_row(args[0], table):
        print(
            f"compat_env: no torchao row for torch {torch_minor(args[0])} in "
            f"{COLAB_CELL.name}'s {_TABLE_NAME}: torchao unbounded, as the Colab cell installs",
            file=sys.stderr,
        )
    print(requirement)
    return 0


if __name__ == "__main__":
    sys.exit(main())
