"""Compatibility records on disk: ``results/compat/torch-<release>.json``, one per torch release.

:func:`make_record` gathers a run's header (torch, torchao, Python, machine id) around its
chapters' entries (``compat_outcome.entry``); :func:`merge` replaces the chapters just run in an
existing record and keeps the others (``make compat TORCH=... NB=book/07_x.ipynb`` re-runs one
chapter); :func:`write_record` checks a record against the schema (``compat_schema``) and writes
it atomically; :func:`read_record` and :func:`read_all` check every record before returning it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scripts.compat.schema import COMPAT_SCHEMA_VERSION, check_compat, file_name
from scripts.results.json_file import read_json, write_json

__all__ = [
    "FOLDER",
    "HEADER",
    "check_header",
    "make_record",
    "merge",
    "record_path",
    "read_record",
    "read_all",
    "release_key",
    "write_record",
]

#: Where the records live, under the repository root.
FOLDER = Path("results") / "compat"
#: What must agree for a partial run to join an existing record.
HEADER = ("torch_release", "torch", "torchao", "torchao_requirement", "python", "machine")


def make_record(
    *,
    torch_release: str,
    torch: str,
    torchao: str,
    torchao_requirement: str,
    python: str,
    machine: str,
    chapters: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """A checked compat record of one run.

    Raises:
        TypeError, ValueError: when the record does not pass ``compat_schema.check_compat``.
    """
    record = {
        "schema": COMPAT_SCHEMA_VERSION,
        "torch_release": torch_release,
        "torch": torch,
        "torchao": torchao,
        "torchao_requirement": torchao_requirement,
        "python": python,
        "machine": machine,
        "chapters": {k: dict(v) for k, v in chapters.items()},
    }
    return check_compat(record, "new record")


def merge(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """``old`` with ``new``'s chapters replaced; the chapters ``new`` did not run are kept.

    Raises:
        ValueError: when ``old`` and ``new`` differ in torch, torchao, Python or machine: a
            chapter's entry must never be shown under versions it did not run with (run every
            chapter, without ``NB``, to replace the whole record).
    """
    if old is None:
        return dict(new)
    check_header(old, new)
    merged = dict(old)
    merged["chapters"] = {**old["chapters"], **new["chapters"]}
    return check_compat(merged, "merged record")


def check_header(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Raise ValueError where ``old`` and ``new`` differ in any of :data:`HEADER`."""
    differ = [k for k in HEADER if old[k] != new[k]]
    if differ:
        pairs = ", ".join(f"{k} {old[k]!r} -> {new[k]!r}" for k in differ)
        raise ValueError(
            f"compat merge: this run differs from the stored record ({pairs}); run every "
            "chapter (no NB=) to replace the record"
        )


def record_path(folder: str | Path, release: str, python: str | None = None) -> Path:
    """``folder/torch-<release>[-py<X.Y>].json`` (``compat_schema.file_name``: never a path
    escape; the suffix names a Python other than the book's)."""
    return Path(folder) / file_name(release, python)


def read_record(path: str | Path) -> dict[str, Any]:
    """Read and check one record; its file name must be ``torch-<its torch_release>.json``.

    Raises:
        ValueError: when it is not JSON, the schema refuses it, or it is named apart from its
            release; TypeError: on a value of the wrong type.
    """
    path = Path(path)
    data = read_json(path)
    check_compat(data, path.name)
    if path.name != file_name(data["torch_release"], data["python"]):
        raise ValueError(
            f"{path.name}: a record of torch {data['torch_release']} on Python "
            f"{data['python']} must be named {file_name(data['torch_release'], data['python'])}"
        )
    return data


def read_all(folder: str | Path) -> list[dict[str, Any]]:
    """Every record in ``folder`` (none when it does not exist), oldest torch release first.

    Raises:
        ValueError, TypeError: see :func:`read_record`; a path that is not a regular file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    records = []
    for path in sorted(folder.glob("*.json")):
        if not path.is_file():
            raise ValueError(f"{path.name}: not a regular file")
        records.append(read_record(path))
    return sorted(records, key=lambda r: (release_key(r["torch_release"]), r["python"]))


def release_key(release: str) -> tuple:
    """A sort key in the numeric order of a release's numbers: ``2.9.0`` before ``2.10.0``."""
    parts = re.findall(r"[0-9]+|[a-z]+", release)
    return tuple((0, int(p)) if p.isdigit() else (-1, p) for p in parts)


def write_record(record: Mapping[str, Any], folder: str | Path) -> Path:
    """Check ``record`` and write it to ``folder/torch-<release>.json`` (temporary name, then
    rename); the folder is made if missing.

    Raises:
        TypeError, ValueError: when the schema refuses the record (nothing is written).
    """
    check_compat(record, "record to write")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return write_json(record_path(folder, record["torch_release"], record["python"]), record)
