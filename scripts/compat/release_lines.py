"""The book's sanitize file plus the lines naming the torch release (runs under another torch).

CI compares every output with ``nbval_sanitize.cfg`` alone: the stored outputs name the pinned
torch (the environment card's ``torch`` line), and a drift there must fail. A run under another
torch on purpose (a GPU host's own torch, ``make compat``) masks those lines too and compares
everything else: :data:`RELEASE_RULES` masks each line naming a torch release ``X.Y.Z`` and drops
the environment card's warning that the book was made with another torch (a line the stored
card does not have). :func:`write` writes the two together as one file for nbval's
``--nbval-sanitize-with``; :func:`rules` reads them for :mod:`scripts.compat.outputs`.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SANITIZE = ROOT / "nbval_sanitize.cfg"
RELEASE_RULES = """
# --- added by scripts/compat/release_lines.py for a run under another torch on purpose
[torch_release_warning]
regex: (?m)^  warning  the book's outputs were made with torch .*\\n
replace: \n
[torch_release_line]
regex: (?m)^.*\\btorch +[0-9]+\\.[0-9]+\\.[0-9]+.*$
replace: <a line naming the torch release>
"""


def text(sanitize: Path = SANITIZE) -> str:
    """The book's sanitize file with :data:`RELEASE_RULES` appended."""
    return sanitize.read_text(encoding="utf-8").rstrip("\n") + "\n" + RELEASE_RULES


def write(target: Path, sanitize: Path = SANITIZE) -> Path:
    """Write :func:`text` to ``target`` (its folder made); returns ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text(sanitize), encoding="utf-8")
    return target


def rules(sanitize: Path = SANITIZE, release: bool = True) -> list[tuple[str, str]]:
    """``(regex, replace)`` pairs in order, read as nbval reads the file (a ``regex: `` line,
    then a ``replace: `` line); with ``release`` :data:`RELEASE_RULES` too."""
    source = text(sanitize) if release else sanitize.read_text(encoding="utf-8")
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", source, flags=re.MULTILINE)
