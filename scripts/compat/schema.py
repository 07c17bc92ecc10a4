"""The one schema of a compatibility record (``results/compat/torch-<release>.json``).

A compat record says, for one torch release, whether each chapter ran under it (``make compat
TORCH=...``). It is contributed data like a results file, so it is checked the same way
(``results_schema``'s validator: JSON Schema draft 2020-12, NaN and bools refused as numbers,
every string one line without control characters): unknown keys, wrong types and ids that could
name a path (``../x``, ``a/b``) are refused before anything reads a record.

A record: ``{"schema", "torch_release", "torch", "torchao", "torchao_requirement", "python",
"machine", "chapters"}``; ``torch_release`` is the release asked for (``2.10.0``, the file's
name), ``torch`` the ``torch.__version__`` that ran (``2.10.0+cu128``), ``torchao`` the
installed torchao version, ``torchao_requirement`` the row of ``colab_cell.TORCHAO_FOR_TORCH``
it was installed from (``torchao`` unbounded without a row), ``machine`` the
``machine_records.machine_id`` of the machine. ``chapters`` maps a notebook's stem to
``compat_outcome.entry``: a failed chapter has an error, a chapter that ran has none and no
failed cell.
"""

from __future__ import annotations

import re
from typing import Any

from scripts.results.schema import CHAPTER_PATTERN, MACHINE_ID_PATTERN
from scripts.results.validator import schema_check, text_schema
from tricks_helpers.fields import SKIPPED

__all__ = ["COMPAT_SCHEMA_VERSION", "RELEASE_PATTERN", "COMPAT_SCHEMA", "check_compat", "file_name"]

COMPAT_SCHEMA_VERSION = 1
#: A torch release as a file name part: digits and dots, an optional pre-release (``rc1``).
RELEASE_PATTERN = r"^[0-9]+(\.[0-9]+){1,2}([a-z]+[0-9]+)?$"
_VERSION = text_schema(64, 1, r"^[0-9][A-Za-z0-9.+-]*$")  # an installed package's version

_SKIPPED = {
    "type": "object",
    "additionalProperties": False,
    "required": ["section", "reason"],
    "properties": {
        name: text_schema(t.max_length, t.min_length, t.pattern) for name, t in SKIPPED.items()
    },
}

_OUTPUTS = {  # compat.outputs.compare: compared as nbval does, the torch-release lines masked
    "type": "object",
    "additionalProperties": False,
    "required": ["cells", "differing"],
    "properties": {
        "cells": {"type": "integer", "minimum": 0},
        "differing": {
            "type": "array",
            "maxItems": 1000,
            "items": {"type": "integer", "minimum": 1},
        },
    },
}

_ENTRY = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "status",
        "seconds",
        "failed_cell",
        "error",
        "skipped",
        "code_sha256",
        "date",
        "commit",
    ],
    "properties": {
        "status": {"enum": ["ran", "failed"]},
        "seconds": {"type": "number", "minimum": 0},
        "failed_cell": {"type": ["integer", "null"], "minimum": 1},
        "error": text_schema(400),
        "skipped": {"type": "array", "maxItems": 100, "items": _SKIPPED},
        "code_sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
        "date": text_schema(10, 10, r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
        "commit": text_schema(80, 1),
        "outputs": _OUTPUTS,  # optional: records made before outputs were compared lack it
    },
    "if": {"properties": {"status": {"const": "failed"}}},
    "then": {"properties": {"error": {"minLength": 1}}},
    "else": {"properties": {"error": {"maxLength": 0}, "failed_cell": {"type": "null"}}},
}

#: The schema of one compat record (JSON Schema, draft 2020-12).
COMPAT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "compatibility record of 'PyTorch Tricks, executed'",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "schema",
        "torch_release",
        "torch",
        "torchao",
        "torchao_requirement",
        "python",
        "machine",
        "chapters",
    ],
    "properties": {
        "schema": {"const": COMPAT_SCHEMA_VERSION},
        "torch_release": text_schema(32, 1, RELEASE_PATTERN),
        "torch": _VERSION,
        "torchao": _VERSION,
        "torchao_requirement": text_schema(100, 1, r"^torchao[A-Za-z0-9.,<>=!~ ]*$"),
        "python": _VERSION,
        "machine": text_schema(160, 1, MACHINE_ID_PATTERN),
        "chapters": {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1000,
            "propertyNames": text_schema(100, 1, CHAPTER_PATTERN),
            "additionalProperties": _ENTRY,
        },
    },
}

_CHECK = schema_check(COMPAT_SCHEMA)


def check_compat(data: Any, name: str = "compat") -> dict[str, Any]:
    """Check one compat record against :data:`COMPAT_SCHEMA` and its torch against its release.

    Returns:
        ``data``, unchanged.

    Raises:
        TypeError: on a value of the wrong type (naming where: ``compat.chapters.07_q.seconds``).
        ValueError: on anything else the schema refuses (an unknown key, a release or chapter
            id with other characters, a failed chapter without an error, ...) or a ``torch``
            that is not the ``torch_release`` (its local part, ``+cpu``, aside).
    """
    _CHECK(data, name)
    if data["torch"].split("+")[0] != data["torch_release"]:
        raise ValueError(
            f"{name}: torch {data['torch']!r} is not release {data['torch_release']!r}"
        )
    return data


#: The Python of the book's stored outputs (.venv, requirements.txt): its records carry no suffix.
BOOK_PYTHON = "3.11"


def python_minor(python: Any) -> str:
    """``3.12`` of ``3.12.1`` (``""`` for None)."""
    if python is None:
        return ""
    m = re.fullmatch(r"([0-9]+\.[0-9]+)(\.[0-9]+.*)?", str(python))
    if not m:
        raise ValueError(f"compat file_name: {python!r} is not a Python version such as 3.12.1")
    return m.group(1)


def file_name(release: Any, python: Any = None) -> str:
    """``torch-<release>.json``, or ``torch-<release>-py<X.Y>.json`` for a run on another
    Python than the book's (:data:`BOOK_PYTHON`): never a path.

    Raises:
        TypeError: when ``release`` is not a string.
        ValueError: when it is not a release number (``../x``, ``2.10/..``), or ``python`` is
            not a version.
    """
    if not isinstance(release, str):
        raise TypeError(f"compat file_name: release must be a string, got {release!r}")
    if not re.fullmatch(RELEASE_PATTERN, release):
        raise ValueError(f"compat file_name: {release!r} is not a torch release such as 2.10.0")
    minor = python_minor(python)
    suffix = f"-py{minor}" if minor and minor != BOOK_PYTHON else ""
    return f"torch-{release}{suffix}.json"
