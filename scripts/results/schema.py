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

The file's bytes are read by ``scripts.results.json_file.read_json`` (strict, bounded, the file
named once in every error); the schema's plumbing (finite numbers, integer counts, errors in
the project's words) is ``scripts.results.validator``'s; a retired verdict word is re-decided
by ``scripts.results.retired_verdict`` before the check.

The file-level check a contributor runs (size, JSON, this schema, the name) is
``scripts.results.check``, above ``machine_records``: this module imports neither.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jsonschema

from scripts.results.validator import Validator, schema_check, short, text_schema
from tricks_helpers import fields
from tricks_helpers.bench import NOISE_THRESHOLD, VERDICTS, decide, interval_coverage
from tricks_helpers.bench.records import FIELDS, SCHEMA_VERSION
from tricks_helpers.claims import CLAIM_FIELDS
from tricks_helpers.claims import STATUSES as CLAIM_STATUSES

__all__ = [
    "SOURCES",
    "STATUSES",
    "MACHINE_ID_PATTERN",
    "CHAPTER_PATTERN",
    "RESULTS_SCHEMA",
    "MAX_RECORDS",
    "MAX_CLAIMS",
    "DRAWN_RANGE",
    "check_results",
    "check_files",
    "file_name",
]

#: Where a results file comes from: the run that made the stored notebooks, or a survey.
SOURCES = ("book", "survey")
#: A chapter's status in a results file.
STATUSES = ("ok", "failed")
#: A machine id: lower-case words joined by ``-`` (``amd-epyc-avx2-only-2t``).
MACHINE_ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
#: A chapter name: a notebook's stem (``03_data_loading``): ``tricks_helpers.fields``'s.
CHAPTER_PATTERN = fields.CHAPTER_PATTERN
#: The most records and claims one machine's file may hold (the book's run has about 200 and
#: 130): the page draws one row per record, so this bounds the page whatever passes the check.
MAX_RECORDS = 2000
MAX_CLAIMS = 1000
#: The range of every time (seconds) and ratio a record may hold: the page draws them on a
#: log axis, and a number outside is no measurement of this book's (1e300, 1e-300).
DRAWN_RANGE = (1e-9, 1e6)
#: How far a record's ratio (median of per-round ratios) may lie from its times' ratio
#: (baseline_s / trick_s, medians of the rounds). The two medians agree within 1.2x on a quiet
#: machine, but not on a loaded one: chapter 05's width-128 checkpoint record measured 0.115x
#: against times of 0.042x (2.7x apart) beside a CI run, so only an order of magnitude refuses.
RATIO_TIMES_FACTOR = 10.0


def _from_fields(spec: fields.Text) -> dict:
    """A text field's schema from the package's definition of it (``tricks_helpers.fields``)."""
    return text_schema(spec.max_length, spec.min_length, spec.pattern)


_COUNT = {"type": "integer", "minimum": 1, "maximum": 2**62}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_DRAWN = {"type": "number", "minimum": DRAWN_RANGE[0], "maximum": DRAWN_RANGE[1]}
_NAME = text_schema(64, 1, r"^[A-Za-z0-9_.-]+$")  # a dtype name, a capped value, a torch version

_MACHINE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "cpu", "isa", "capped", "threads", "gpu", "torch"],
    "properties": {
        "id": text_schema(160, 1, MACHINE_ID_PATTERN),
        "cpu": text_schema(200, 1),
        # optional: files written before it (x86 Linux) lack it
        "arch": text_schema(32, 1, r"^[a-z0-9_]+$"),
        "isa": {
            "type": "array",
            "uniqueItems": True,
            "maxItems": 32,
            "items": text_schema(32, 1, r"^[a-z0-9_]+$"),
        },
        "capped": {
            "type": "object",
            "maxProperties": 8,
            "propertyNames": text_schema(64, 1, r"^[A-Z][A-Z0-9_]*$"),
            "additionalProperties": _NAME,
        },
        "threads": _COUNT,
        "gpu": text_schema(200, 1),
        "torch": text_schema(64, 1, r"^[A-Za-z0-9_.+-]+$"),
    },
}

_CHAPTER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["status", "error", "seconds"],
    "properties": {
        "status": {"enum": list(STATUSES)},
        "error": text_schema(1000),
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
            "additionalProperties": text_schema(300),
        },
        # issue 39 (tricks_helpers.limits): the probe's version, the kernel that reached each
        # limit, and the fastest rate each chapter held against a limit (chapter -> name -> /s)
        "probe": _COUNT,
        "where": {
            "type": "object",
            "maxProperties": 32,
            "propertyNames": _NAME,
            "additionalProperties": text_schema(200),
        },
        "observed": {
            "type": "object",
            "maxProperties": 1000,
            "propertyNames": text_schema(100, 1, CHAPTER_PATTERN),
            "additionalProperties": {
                "type": "object",
                "maxProperties": 33,
                "propertyNames": _NAME,
                "additionalProperties": _POSITIVE,
            },
        },
    },
}

# A record's fields are the package's (tricks_helpers.bench.records.FIELDS); its text fields
# take their limits from tricks_helpers.fields.RECORD; the rest is said here once.
_RECORD_VALUES: dict[str, dict] = {
    "schema": {"const": SCHEMA_VERSION},
    "threads": _COUNT,
    "baseline_s": _DRAWN,
    "trick_s": _DRAWN,
    "ratio": _DRAWN,
    "lo": _DRAWN,
    "hi": _DRAWN,
    "rounds": {"type": "integer", "minimum": 2, "maximum": 10**6},
    "coverage": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "calls_per_round": _COUNT,
    "checked": {"type": "boolean"},
    "verdict": {"enum": list(VERDICTS)},
    **{name: _from_fields(spec) for name, spec in fields.RECORD.items()},
}


def _object(values: dict[str, dict], names: tuple[str, ...], what: str) -> dict:
    """The schema of an object holding exactly ``names``, each valued as ``values`` says."""
    assert set(values) == set(names), f"a {what} field without a schema, or the reverse"
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(names),
        "properties": {name: values[name] for name in names},
    }


_RECORD = _object(_RECORD_VALUES, FIELDS, "record")

#: One claim a chapter's run decided (``tricks_helpers.claims.Claim.record``).
_CLAIM_VALUES: dict[str, dict] = {
    "status": {"enum": list(CLAIM_STATUSES)},
    "measured": {"type": "boolean"},
    **{name: _from_fields(spec) for name, spec in fields.CLAIM.items()},
}
_CLAIM = _object(_CLAIM_VALUES, CLAIM_FIELDS, "claim")

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
            "propertyNames": text_schema(100, 1, CHAPTER_PATTERN),
            "additionalProperties": _CHAPTER,
        },
        "limits": _LIMITS,
        "records": {"type": "array", "maxItems": MAX_RECORDS, "items": _RECORD},
        "claims": {"type": "array", "maxItems": MAX_CLAIMS, "items": _CLAIM},
    },
}


_CHECK = schema_check(RESULTS_SCHEMA)


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
            does not list, or a claim of a chapter it does not list or repeated (same
            chapter and key).
    """
    _CHECK(data, name)
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
        times = rec["baseline_s"] / rec["trick_s"]
        if not 1 / RATIO_TIMES_FACTOR <= rec["ratio"] / times <= RATIO_TIMES_FACTOR:
            raise ValueError(
                f"{where}: ratio {rec['ratio']:.4g} but its times say {times:.4g} "
                f"(baseline_s / trick_s); more than {RATIO_TIMES_FACTOR:g}x apart"
            )
        coverage = interval_coverage(rec["rounds"])
        if not math.isclose(rec["coverage"], coverage, rel_tol=1e-9):
            raise ValueError(
                f"{where}: coverage {rec['coverage']} but {rec['rounds']} rounds give {coverage}"
            )
        if rec["chapter"] not in data["chapters"]:
            raise ValueError(f"{where}: chapter {rec['chapter']!r} is not listed")
    seen = set()
    for i, claim in enumerate(data.get("claims", [])):
        where = f"{name}: claim {i}"
        if claim["chapter"] not in data["chapters"]:
            raise ValueError(f"{where}: chapter {claim['chapter']!r} is not listed")
        if (claim["chapter"], claim["key"]) in seen:
            raise ValueError(f"{where} repeats {claim['chapter']}/{claim['key']}")
        seen.add((claim["chapter"], claim["key"]))
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
        raise TypeError(f"results_path: machine_id must be a string, got {short(machine_id)}")
    if source not in SOURCES:
        raise ValueError(f"results_path: source must be one of {SOURCES}, got {source!r}")
    try:
        Validator(_MACHINE["properties"]["id"]).validate(machine_id)
    except jsonschema.ValidationError as exc:
        raise ValueError(
            f"results_path: machine id {short(machine_id)} must be lower-case words joined by '-'"
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
