"""The one schema of a results file (``results/*.json``), checked before anything reads one.

A results file is contributed data (a reader's survey, issue 32), so every reader of one (the
results page, the survey's merge, ``survey-compare``) goes through
``machine_records.validate_results``, which ends in :func:`check_results`: the file is checked
against :data:`RESULTS_SCHEMA` (a JSON Schema, draft 2020-12, validated by the ``jsonschema``
library) and then against what a schema cannot say: each record's ratio inside its own
interval, its verdict the one :func:`tricks_helpers.bench.decide` gives for that interval, its
coverage the one its rounds give (:func:`tricks_helpers.bench.interval_coverage`: ``1 -
2**(1 - n)`` below 6 rounds), its chapter one the file lists. :func:`check_files` checks a
folder's files together: at most one file of source ``"book"``, each file named after its
machine id and source (:func:`file_name`), no machine id twice for one source.

What the schema guarantees a renderer: every number finite (NaN and infinities are refused),
every count an integer (not a bool, not ``2.0``), every string one line without control
characters and of bounded length; machine ids are lower-case words joined by ``-`` (what
``machine_records.machine_id`` makes; never a path), chapter names letters, digits, ``_`` and
``-``. Strings may still hold ``<``, ``|`` or `````: the page escapes them
(``results_machines.cell_text``).

Used by ``machine_records`` (``validate_results``, ``results_path``) and
``results_machines.machine_files``.

Check a file before contributing it (CONTRIBUTING.md, "Contribute your machine's survey"), or a
contributed one before reading it: ``python -m scripts.results.schema --contributed FILE...``
runs every check a reader of the file runs (:func:`check_file`) and prints one line per file;
exit status 1 when a file fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema

from tricks_helpers.bench import (
    FASTER,
    NOISE_THRESHOLD,
    SLOWER,
    UNDECIDED,
    VERDICTS,
    decide,
    interval_coverage,
)
from tricks_helpers.bench.records import SCHEMA_VERSION
from tricks_helpers.claims import STATUSES as CLAIM_STATUSES

__all__ = [
    "SOURCES",
    "STATUSES",
    "MACHINE_ID_PATTERN",
    "CHAPTER_PATTERN",
    "RESULTS_SCHEMA",
    "check_results",
    "RETIRED_VERDICT",
    "redecide",
    "upgrade_verdicts",
    "check_files",
    "file_name",
    "MAX_FILE_BYTES",
    "check_file",
    "main",
]

#: The verdict word the book printed before its four verdicts (issue 39): an interval that was
#: neither FASTER nor SLOWER. A file or stored output written then is read with the verdict its
#: interval gives now (SAME or UNDECIDED: :func:`redecide`), never with the retired word.
RETIRED_VERDICT = "NO CLEAR DIFFERENCE"


def redecide(verdict: str, lo: float, hi: float) -> str:
    """The verdict to read for ``verdict`` over ``[lo, hi]``: a current word as it is, the
    retired word as :func:`~tricks_helpers.bench.decide` decides the interval now.

    The retired word meant "neither FASTER nor SLOWER", so where a printed (rounded) interval
    seems to decide one of those, its true end lay within rounding of the threshold: the
    interval straddles it, UNDECIDED.

    Raises:
        ValueError: on a word that is no verdict.
    """
    if verdict in VERDICTS:
        return verdict
    if verdict != RETIRED_VERDICT:
        raise ValueError(f"redecide: {verdict!r} is no verdict; verdicts are {VERDICTS}")
    now = decide(lo, hi, NOISE_THRESHOLD)
    return UNDECIDED if now in (FASTER, SLOWER) else now


def upgrade_verdicts(data: Any) -> Any:
    """A results file's content with each record's retired verdict word re-decided from its
    interval (:func:`redecide`); anything else, and any file without the word, unchanged.
    Called by the one reader (``machine_records.read_results``) before the checks."""
    if not isinstance(data, dict) or not isinstance(data.get("records"), list):
        return data
    for rec in data["records"]:
        if isinstance(rec, dict) and rec.get("verdict") == RETIRED_VERDICT:
            lo, hi = rec.get("lo"), rec.get("hi")
            if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and 0 < lo <= hi:
                rec["verdict"] = redecide(RETIRED_VERDICT, lo, hi)
    return data


#: Where a results file comes from: the run that made the stored notebooks, or a survey.
SOURCES = ("book", "survey")
#: A chapter's status in a results file.
STATUSES = ("ok", "failed")
#: A machine id: lower-case words joined by ``-`` (``amd-epyc-avx2-only-2t``).
MACHINE_ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
#: A chapter name: a notebook's stem (``03_data_loading``).
CHAPTER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
# Python's `$` also matches before a final newline, so every string also refuses control
# characters (newlines included) with this search, which has no anchor to fool.
_CONTROL = "[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]"


def _text(max_length: int, min_length: int = 0, pattern: str | None = None) -> dict:
    """A one-line string schema of bounded length (and an optional allowed-characters pattern)."""
    out: dict[str, Any] = {
        "type": "string",
        "minLength": min_length,
        "maxLength": max_length,
        "not": {"pattern": _CONTROL},
        "description": "one line of text without control characters",
    }
    if pattern:
        out["pattern"] = pattern
    return out


_COUNT = {"type": "integer", "minimum": 1, "maximum": 2**62}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_NAME = _text(64, 1, r"^[A-Za-z0-9_.-]+$")  # a dtype name, a capped value, a torch version

_MACHINE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "cpu", "isa", "capped", "threads", "gpu", "torch"],
    "properties": {
        "id": _text(160, 1, MACHINE_ID_PATTERN),
        "cpu": _text(200, 1),
        # optional: files written before it (x86 Linux) lack it
        "arch": _text(32, 1, r"^[a-z0-9_]+$"),
        "isa": {
            "type": "array",
            "uniqueItems": True,
            "maxItems": 32,
            "items": _text(32, 1, r"^[a-z0-9_]+$"),
        },
        "capped": {
            "type": "object",
            "maxProperties": 8,
            "propertyNames": _text(64, 1, r"^[A-Z][A-Z0-9_]*$"),
            "additionalProperties": _NAME,
        },
        "threads": _COUNT,
        "gpu": _text(200, 1),
        "torch": _text(64, 1, r"^[A-Za-z0-9_.+-]+$"),
    },
}

_CHAPTER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["status", "error", "seconds"],
    "properties": {
        "status": {"enum": list(STATUSES)},
        "error": _text(1000),
        "seconds": {"type": "number", "minimum": 0},
    },
    # a failed chapter says why; a chapter that ran has no error
    "if": {"properties": {"status": {"const": "failed"}}},
    "then": {"properties": {"error": {"minLength": 1}}},
    "else": {"properties": {"error": {"maxLength": 0}}},
}

_LIMITS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["threads", "cache_bytes", "bandwidth", "matmul", "skipped"],
    "properties": {
        "threads": _COUNT,
        "cache_bytes": _COUNT,
        "bandwidth": _POSITIVE,
        "matmul": {
            "type": "object",
            "maxProperties": 32,
            "propertyNames": _NAME,
            "additionalProperties": _POSITIVE,
        },
        "skipped": {
            "type": "object",
            "maxProperties": 32,
            "propertyNames": _NAME,
            "additionalProperties": _text(300),
        },
    },
}

_RECORD = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "schema",
        "label",
        "chapter",
        "device",
        "threads",
        "baseline_s",
        "trick_s",
        "ratio",
        "lo",
        "hi",
        "rounds",
        "coverage",
        "calls_per_round",
        "checked",
        "verdict",
        "why",
    ],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "label": _text(300, 1),
        "chapter": _text(100, 1, CHAPTER_PATTERN),
        "device": _text(32, 1, r"^[a-z][a-z0-9_]*(:[0-9]+)?$"),
        "threads": _COUNT,
        "baseline_s": _POSITIVE,
        "trick_s": _POSITIVE,
        "ratio": _POSITIVE,
        "lo": _POSITIVE,
        "hi": _POSITIVE,
        "rounds": {"type": "integer", "minimum": 2, "maximum": 10**6},
        "coverage": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "calls_per_round": _COUNT,
        "checked": {"type": "boolean"},
        "verdict": {"enum": list(VERDICTS)},
        "why": _text(300),
    },
}

#: One claim a chapter's run decided (``tricks_helpers.claims.Claim.record``).
_CLAIM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["chapter", "key", "advice", "condition", "status", "evidence", "measured"],
    "properties": {
        "chapter": _text(100, 1, CHAPTER_PATTERN),
        "key": _text(60, 1, r"^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$"),
        "advice": _text(300, 1),
        "condition": _text(200, 1),
        "status": {"enum": list(CLAIM_STATUSES)},
        "evidence": _text(300, 1),
        "measured": {"type": "boolean"},
    },
}

#: The schema of one results file (JSON Schema, draft 2020-12).
RESULTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "results file of 'PyTorch Tricks, executed'",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema", "source", "machine", "chapters", "records"],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "source": {"enum": list(SOURCES)},
        "machine": _MACHINE,
        "chapters": {
            "type": "object",
            "maxProperties": 1000,
            "propertyNames": _text(100, 1, CHAPTER_PATTERN),
            "additionalProperties": _CHAPTER,
        },
        "limits": _LIMITS,
        "records": {"type": "array", "items": _RECORD},
        "claims": {"type": "array", "items": _CLAIM},
    },
}


def _is_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # not 2.0, not True


def _is_number(_checker: Any, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)  # NaN passes every comparison a schema can state: refuse it


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)
_Validator.check_schema(RESULTS_SCHEMA)
_VALIDATOR = _Validator(RESULTS_SCHEMA)


def _where(name: str, path: Iterable[Any]) -> str:
    out = name
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _error(name: str, error: jsonschema.ValidationError) -> Exception:
    """The schema's complaint as the project's errors: a wrong type is a TypeError."""
    where = _where(name, error.absolute_path)
    if error.validator == "type":
        return TypeError(
            f"{where} must be of type {error.validator_value}, got {_short(error.instance)}"
        )
    if error.validator == "not":
        return ValueError(
            f"{where} must be one line without control characters: {_short(error.instance)}"
        )
    if error.validator == "pattern":
        return ValueError(
            f"{where} {_short(error.instance)} has characters outside {error.validator_value}"
        )
    message = error.message.replace(repr(error.instance), _short(error.instance))
    message = message if len(message) <= 300 else message[:297] + "..."
    return ValueError(f"{where}: {message}")


def read_json(path: Path) -> Any:
    """The JSON in ``path``, refusing what strict JSON has not (``NaN``, ``Infinity``).

    Raises:
        ValueError: when the file is not JSON or holds such a constant (named by file).
    """

    def no_constant(name: str) -> None:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not JSON ({exc})") from exc


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` to ``path`` as indented JSON with sorted keys, atomically (a temporary
    name beside it, then a rename): a reader never sees half a file. Returns ``path``."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def check_results(data: Any, name: str = "results") -> dict[str, Any]:
    """Check one results file's content against :data:`RESULTS_SCHEMA` and its records' sense.

    Returns:
        ``data``, unchanged.

    Raises:
        TypeError: when a value has the wrong type (a string for a count, ``None`` for a text,
            NaN for a number), naming where (``results.machine.threads``).
        ValueError: on anything else the schema refuses (a negative count, a machine id or
            chapter name with other characters, a newline in a text, an unknown key), a record
            whose ratio lies outside its interval, whose verdict is not the one its interval
            gives, whose coverage is not the one its rounds give, or whose chapter the file
            does not list.
    """
    errors = list(_VALIDATOR.iter_errors(data))
    if errors:
        raise _error(name, jsonschema.exceptions.best_match(errors))
    for i, rec in enumerate(data["records"]):
        where = f"{name}: record {i} ({rec['label'][:60]!r})"
        if not rec["lo"] <= rec["ratio"] <= rec["hi"]:
            raise ValueError(
                f"{where}: ratio {rec['ratio']} outside its interval [{rec['lo']}, {rec['hi']}]"
            )
        verdict = decide(rec["lo"], rec["hi"], NOISE_THRESHOLD)
        if rec["verdict"] != verdict:
            raise ValueError(
                f"{where}: verdict {rec['verdict']} but the interval [{rec['lo']}, {rec['hi']}] "
                f"gives {verdict}"
            )
        coverage = interval_coverage(rec["rounds"])
        if not math.isclose(rec["coverage"], coverage, rel_tol=1e-9):
            raise ValueError(
                f"{where}: coverage {rec['coverage']} but {rec['rounds']} rounds give {coverage}"
            )
        if rec["chapter"] not in data["chapters"]:
            raise ValueError(f"{where}: chapter {rec['chapter']!r} is not listed")
    return data


def file_name(machine_id: Any, source: Any) -> str:
    """The name of a machine's results file of ``source``: never a path.

    Returns:
        ``<machine_id>.json`` for ``"book"``, ``<machine_id>-survey.json`` for ``"survey"``.

    Raises:
        TypeError: when ``machine_id`` is not a string.
        ValueError: on an unknown ``source`` or a machine id that is not lower-case words
            joined by ``-`` (``../escaped``, ``/tmp/x``: no path can be made from one).
    """
    if not isinstance(machine_id, str):
        raise TypeError(f"results_path: machine_id must be a string, got {_short(machine_id)}")
    if source not in SOURCES:
        raise ValueError(f"results_path: source must be one of {SOURCES}, got {source!r}")
    try:
        _Validator(_MACHINE["properties"]["id"]).validate(machine_id)
    except jsonschema.ValidationError as exc:
        raise ValueError(
            f"results_path: machine id {_short(machine_id)} must be lower-case words joined by '-'"
        ) from exc
    return f"{machine_id}.json" if source == "book" else f"{machine_id}-{source}.json"


def check_files(files: Mapping[str, Mapping[str, Any]]) -> None:
    """Check a results folder's files together (each already passed :func:`check_results`).

    Args:
        files: file name -> its content.

    Raises:
        ValueError: when a file is not named :func:`file_name` of its machine id and source
            (so no two files of one folder share a machine id and source: they would draw as
            one; a machine's book file and its survey file are two columns, ``(book)`` marks
            the first), or when more than one file has source ``"book"`` (one of them would
            replace the book's own table).
    """
    for name, data in files.items():
        machine_id, source = data["machine"]["id"], data["source"]
        want = file_name(machine_id, source)
        if name != want:
            raise ValueError(
                f"{name}: a results file of machine {machine_id!r} and source {source!r} "
                f"must be named {want}"
            )
    books = sorted(name for name, data in files.items() if data["source"] == "book")
    if len(books) > 1:
        raise ValueError(f"several results files with source 'book': {books}; keep one")


#: The largest results file the check reads: a survey of all ten chapters is about 130 KB.
MAX_FILE_BYTES = 4 * 2**20


def check_file(path: str | Path, *, contributed: bool = False) -> dict[str, Any]:
    """Every check a results file passes before anything reads it; returns its content.

    A regular file (not a link, a folder or a device) of at most :data:`MAX_FILE_BYTES`, UTF-8
    JSON without ``NaN``/``Infinity``, valid (``machine_records.read_results``: this schema and
    each record's sense) and named after its machine id and source (:func:`file_name`).

    Args:
        path: the file.
        contributed: also require source ``"survey"``: a contributed file never replaces the
            book's reference run.

    Raises:
        ValueError: naming the file and the first check it fails (TypeError: a value of the
            wrong type, as :func:`check_results`).
    """
    from scripts.book import machine_records  # imports this module: imported here, not at the top

    path = Path(path)
    if path.is_symlink() or not path.is_file():
        raise ValueError(f"{path.name}: not a regular file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path.name}: {size:,} bytes, more than {MAX_FILE_BYTES:,}")
    try:
        data = machine_records.read_results(path)
    except RecursionError:
        raise ValueError(f"{path.name}: nested too deeply") from None
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
            print(f"results_schema: {path}: INVALID: {exc}")
            continue
        if path.name in good:
            failed += 1
            print(f"results_schema: {path}: INVALID: a second file named {path.name}")
            continue
        good[path.name] = data
        print(f"results_schema: {path}: ok, {_summary(data)}")
    try:
        check_files(good)
    except ValueError as exc:
        failed += 1
        print(f"results_schema: together: INVALID: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
