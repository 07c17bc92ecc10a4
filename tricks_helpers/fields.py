"""What a record, a claim and a skipped-section line may hold: the one definition (all chapters).

A comparison's record (:mod:`tricks_helpers.bench.records`), a decided claim
(:mod:`tricks_helpers.claims`) and a skipped section's line
(:func:`tricks_helpers.notebook.skipped`) end in a machine's results file, which the workshop
checks against a schema before anything reads it. The limits of their text fields are written
here once: the constructors check each value when it is made (:func:`check_text`, refusing at
once with the field named), and the workshop's schema (``scripts/results_schema.py``) is built
from the same :class:`Text` values, so nothing the package accepts is refused after a whole
run, nor the reverse.

Every text field is one line: no character of :data:`FORBIDDEN` (control characters, so tabs,
carriage returns and line feeds; zero-width and other invisible format characters; bidirectional
controls that reorder what a reader sees; line and paragraph separators). :data:`RECORD`,
:data:`CLAIM` and :data:`SKIPPED` give each field's :class:`Text`; the allowed words of a
record's ``verdict`` and a claim's ``status`` live with their meaning
(``tricks_helpers.bench.verdicts.VERDICTS``, ``tricks_helpers.claims.STATUSES``).

Importing this module changes no global state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tricks_helpers._checks import check_type

__all__ = [
    "FORBIDDEN",
    "CHAPTER_PATTERN",
    "KEY_PATTERN",
    "DEVICE_PATTERN",
    "Text",
    "RECORD",
    "CLAIM",
    "SKIPPED",
    "check_text",
    "check_texts",
    "one_line",
]

#: The characters no text field may hold, as a regular-expression character class: C0 and C1
#: controls (tab, CR, LF...), the soft hyphen, the Arabic letter mark, the Mongolian vowel
#: separator, zero-width spaces and joiners, left-to-right and right-to-left marks, the line
#: and paragraph separators, bidi embeddings, overrides and isolates, word joiners and other
#: invisible operators, the byte-order mark, interlinear annotation marks and tag characters.
FORBIDDEN = (
    "[\\x00-\\x1f\\x7f-\\x9f\\xad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e"
    "\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb\\U000e0000-\\U000e007f]"
)
_FORBIDDEN = re.compile(FORBIDDEN)

#: A chapter name: a notebook's stem (``03_data_loading``), or a folder-qualified one
#: (``extra-03_data_loading``) where two notebooks share a stem.
CHAPTER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
#: A claim's key: letters and digits, words joined by ``-`` (``int8-compile``).
KEY_PATTERN = r"^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$"
#: A device as torch names it (``cpu``, ``cuda:0``).
DEVICE_PATTERN = r"^[a-z][a-z0-9_]*(:[0-9]+)?$"


@dataclass(frozen=True)
class Text:
    """What one text field may hold: one line of ``min_length`` to ``max_length`` characters,
    none of :data:`FORBIDDEN`, and, where ``pattern`` is given, matching it whole."""

    max_length: int
    min_length: int = 0
    pattern: str | None = None


#: A comparison's record (:func:`tricks_helpers.bench.records.validate_record`).
RECORD: Mapping[str, Text] = {
    "label": Text(300, 1),
    "chapter": Text(100, 1, CHAPTER_PATTERN),
    "device": Text(32, 1, DEVICE_PATTERN),
    "why": Text(300),
}

#: A claim's record (:class:`tricks_helpers.claims.Claim`).
CLAIM: Mapping[str, Text] = {
    "chapter": Text(100, 1, CHAPTER_PATTERN),
    "key": Text(60, 1, KEY_PATTERN),
    "advice": Text(300, 1),
    "condition": Text(200, 1),
    "evidence": Text(300, 1),
}

#: A skipped section's line, ``[skipped] <section>: <reason>`` (``notebook.skipped``).
SKIPPED: Mapping[str, Text] = {
    "section": Text(200, 1),
    "reason": Text(300),
}


def _shown(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_text(where: str, name: str, value: Any, spec: Text) -> str:
    """Return ``value`` after checking it against ``spec``.

    Raises:
        TypeError: when ``value`` is not a string.
        ValueError: naming ``name``: too short (an empty or blank required text), too long, a
            character of :data:`FORBIDDEN` (named by its code point), or not matching the
            pattern.
    """
    check_type(where, name, value, str)
    if spec.min_length and not value.strip():
        raise ValueError(f"{where}: {name} must not be empty")
    if len(value) < spec.min_length:
        raise ValueError(f"{where}: {name} must have at least {spec.min_length} characters")
    if len(value) > spec.max_length:
        raise ValueError(
            f"{where}: {name} is {len(value)} characters, more than {spec.max_length}: "
            f"{_shown(value)}"
        )
    bad = _FORBIDDEN.search(value)
    if bad:
        raise ValueError(
            f"{where}: {name} must be one line of visible text, got U+{ord(bad.group()):04X} "
            f"at {bad.start()} in {_shown(value)}"
        )
    if spec.pattern is not None and not re.search(spec.pattern, value):  # anchored; no \n
        raise ValueError(f"{where}: {name} {_shown(value)} has characters outside {spec.pattern}")
    return value


def check_texts(where: str, specs: Mapping[str, Text], values: Mapping[str, Any]) -> None:
    """:func:`check_text` for every field of ``specs`` that ``values`` holds (``None`` skipped:
    a record's chapter before the runner names it)."""
    for name, spec in specs.items():
        if values.get(name) is not None:
            check_text(where, name, values[name], spec)


def one_line(text: str, max_length: int) -> str:
    """``text`` made a valid text field of ``max_length``: every :data:`FORBIDDEN` character
    (a tab, a line break, a bidi control) a space, runs of blanks one, cut with ``...``.

    For text the book did not write itself (an error message, a traceback's line) that a
    results or compat file stores.
    """
    check_type("one_line", "text", text, str)
    flat = " ".join(_FORBIDDEN.sub(" ", text).split())
    return flat if len(flat) <= max_length else flat[: max_length - 3] + "..."
