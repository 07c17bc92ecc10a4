"""The strict reader and the atomic writer of the workshop's JSON files (results, compat records).

:func:`read_json` reads a file nobody vouches for (a contributed survey, a compat record): it
never blocks, refuses what is not a regular file or is too large before reading, and names the
file once in every error. :func:`write_json` never leaves half a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tricks_helpers._io import atomic_target, read_regular

__all__ = ["MAX_FILE_BYTES", "MAX_DEPTH", "MAX_NUMBER_CHARS", "read_json", "write_json"]

#: The largest results file any reader reads: a survey of all ten chapters is about 130 KB.
MAX_FILE_BYTES = 4 * 2**20
#: The deepest nesting and the longest number a results or compat file may hold.
MAX_DEPTH = 16
MAX_NUMBER_CHARS = 40


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (iterative: no recursion to exhaust)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                todo.extend(
                    (v, level + 1) for v in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def read_json(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The JSON in ``path``, read as a file nobody vouches for: the one strict reader of
    results files and compat records (the page, the survey's merge, the contributed-file
    check, ``compat.records``).

    The file is opened without blocking and must be a regular file (a FIFO, a device or a
    folder is refused from ``fstat``) of at most ``max_bytes`` (refused before reading); its
    bytes UTF-8; its JSON strict: no ``NaN``/``Infinity``, no key twice in one object (a
    reviewer would see one value and a reader another), no number longer than
    :data:`MAX_NUMBER_CHARS` characters, no nesting deeper than :data:`MAX_DEPTH`.

    Raises:
        FileNotFoundError: no such file (named).
        ValueError: on anything above, always naming the file.
    """
    path = Path(path)
    name = path.name

    def no_constant(text: str) -> None:
        raise ValueError(f"{text} is not a JSON number")

    def number(kind: type) -> Any:
        def parse(text: str) -> Any:
            if len(text) > MAX_NUMBER_CHARS:
                raise ValueError(f"a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})")
            return kind(text)

        return parse

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ValueError(f"key {key[:60]!r} appears twice in one object")
            out[key] = value
        return out

    try:
        raw = read_regular("", path, max_bytes)  # its errors begin with the file's name
    except OSError as exc:  # not found, a FIFO, a folder, unreadable: named once already
        said = str(exc.strerror or exc)
        if not said.startswith(f"{name}:"):  # an error of the read itself (EIO)
            said = f"{name}: cannot be read ({said})"
        raise (FileNotFoundError if isinstance(exc, FileNotFoundError) else ValueError)(
            said
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(
            text,
            parse_constant=no_constant,
            parse_int=number(int),
            parse_float=number(float),
            object_pairs_hook=unique,
        )
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: not JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"{name}: nested too deeply (at most {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    if _depth(data) > MAX_DEPTH:
        raise ValueError(f"{name}: nested too deeply (at most {MAX_DEPTH} levels)")
    return data


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` to ``path`` as indented JSON with sorted keys, atomically (a unique
    temporary name beside it, then a rename): a reader never sees half a file, and two writers
    never share a temporary. Returns ``path``."""
    text = json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"
    with atomic_target(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return Path(path)
