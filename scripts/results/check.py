"""Check results files as every reader of them does: the command a contributor runs.

    python -m scripts.results.check --contributed results/<machine-id>-survey.json
    python -m scripts.results.check results/*.json

Check a file before contributing it (CONTRIBUTING.md, "Contribute your machine's survey"), or a
contributed one before reading it: every check a reader of the file runs (:func:`check_file`:
a regular file of bounded size, strict JSON, ``machine_records.read_results``, the name), then
the files together (``schema.check_files``); one line per file, exit status 1 when one fails.
Above both ``schema`` and ``machine_records`` (which imports the schema), so no import loop.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scripts.book import machine_records
from scripts.results.schema import check_files

__all__ = ["check_file", "main"]


def check_file(path: str | Path, *, contributed: bool = False) -> dict[str, Any]:
    """Every check a results file passes before anything reads it; returns its content.

    A regular file (not a link, a folder or a device) of at most ``json_file.MAX_FILE_BYTES``,
    strict UTF-8 JSON (``json_file.read_json``: no ``NaN``, no repeated key, bounded depth and
    numbers), valid (``machine_records.read_results``: the schema and
    each record's sense) and named after its machine id and source (``schema.file_name``).

    Args:
        path: the file.
        contributed: also require source ``"survey"``: a contributed file never replaces the
            book's reference run.

    Raises:
        ValueError: naming the file and the first check it fails (TypeError: a value of the
            wrong type, as ``schema.check_results``).
    """
    path = Path(path)
    if path.is_symlink():  # a link may lead out of the checkout: never followed
        raise ValueError(f"{path.name}: a symbolic link, not a regular file")
    if not path.exists():
        raise ValueError(f"{path.name}: no such file")
    data = machine_records.read_results(path)  # json_file.read_json: regular, bounded, strict
    check_files({path.name: data})
    if contributed and data["source"] != "survey":
        raise ValueError(
            f"{path.name}: source {data['source']!r}; a contributed file is a survey "
            "(make survey writes results/<machine-id>-survey.json)"
        )
    return data


def _summary(data: Mapping[str, Any]) -> str:
    failed = sum(info["status"] == "failed" for info in data["chapters"].values())
    return (
        f"{data['source']} of {data['machine']['id']}: {len(data['chapters'])} chapters "
        f"({failed} failed), {len(data['records'])} records, {len(data.get('claims', []))} claims"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Check results files (results/*.json) as every reader of them does."
    )
    parser.add_argument("files", nargs="+", type=Path, help="results files to check")
    parser.add_argument("--contributed", action="store_true", help="also require source 'survey'")
    args = parser.parse_args(argv)
    good: dict[str, dict[str, Any]] = {}
    failed = 0
    for path in args.files:
        try:
            data = check_file(path, contributed=args.contributed)
        except (TypeError, ValueError) as exc:
            failed += 1
            said = str(exc)  # begins with the file's name: said once, as its path, here
            said = said[len(path.name) :].lstrip(":. ") if said.startswith(path.name) else said
            print(f"results.check: {path}: INVALID: {said}")
            continue
        if path.name in good:
            failed += 1
            print(f"results.check: {path}: INVALID: a second file named {path.name}")
            continue
        good[path.name] = data
        print(f"results.check: {path}: ok, {_summary(data)}")
    try:
        check_files(good)
    except ValueError as exc:
        failed += 1
        print(f"results.check: together: INVALID: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
