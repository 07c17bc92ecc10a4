"""Machine-readable records of comparisons, written beside the printed lines (issues 19, 22).

A record is a plain dict, one per shown comparison, made by :meth:`Comparison.record
<tricks_helpers.bench.comparisons.Comparison.record>`. Emission never changes what a cell prints:
only when the environment variable :data:`RECORDS_ENV` (``TRICKS_RECORDS``) names a file does
each shown comparison append its record to that file as one JSON line (:func:`emit`), with the
chapter named by :data:`CHAPTER_ENV` (``TRICKS_RECORDS_CHAPTER``, set by the runner) or, failing
that, the file's stem. Without the variable nothing is written and nothing is kept: no global
state. ``scripts/book/run_notebooks.py`` (the book's runner, in every mode) sets both variables.

Fields (:data:`FIELDS`): ``schema`` (:data:`SCHEMA_VERSION`), ``label``, ``chapter`` (``None``
when unknown), ``device``, ``threads``, ``baseline_s`` and ``trick_s`` (median seconds per call),
``ratio`` (median of per-round ratios), ``lo``/``hi`` (its interval), ``rounds``, ``coverage``
(exact, 0-1), ``calls_per_round``, ``checked``, ``verdict`` and ``why`` (the comparison's
invariant partner, ``""`` when none was given).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tricks_helpers.fields import RECORD, check_texts

__all__ = [
    "SCHEMA_VERSION",
    "RECORDS_ENV",
    "CHAPTER_ENV",
    "FIELDS",
    "make_record",
    "validate_record",
    "emit",
    "read_records",
]

#: Version of the record layout; a reader refuses records of another version.
SCHEMA_VERSION = 1
#: The environment variable naming the JSON-lines file shown comparisons append to.
RECORDS_ENV = "TRICKS_RECORDS"
#: The environment variable naming the chapter the records belong to.
CHAPTER_ENV = "TRICKS_RECORDS_CHAPTER"

_VERDICT_WORDS = ("FASTER", "SLOWER", "SAME", "UNDECIDED")  # bench.verdicts.VERDICTS
#: Field name -> the type(s) its value must have.
FIELDS: dict[str, tuple[type, ...]] = {
    "schema": (int,),
    "label": (str,),
    "chapter": (str, type(None)),
    "device": (str,),
    "threads": (int,),
    "baseline_s": (float,),
    "trick_s": (float,),
    "ratio": (float,),
    "lo": (float,),
    "hi": (float,),
    "rounds": (int,),
    "coverage": (float,),
    "calls_per_round": (int,),
    "checked": (bool,),
    "verdict": (str,),
    "why": (str,),
}
_POSITIVE = ("baseline_s", "trick_s", "ratio", "lo", "hi")


def validate_record(record: Any) -> dict[str, Any]:
    """Check one record against the schema and return it as a plain dict.

    Raises:
        TypeError: when ``record`` is not a mapping or a field has the wrong type.
        ValueError: on missing or unknown fields, another schema version, a non-positive or
            non-finite time or ratio, ``lo > hi``, a coverage outside (0, 1), fewer than one
            round, an unknown verdict word, or a text field outside its
            :data:`tricks_helpers.fields.RECORD` limits (named).
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"validate_record: a record is a mapping, got {type(record).__name__}")
    missing = sorted(set(FIELDS) - set(record))
    unknown = sorted(set(record) - set(FIELDS))
    if missing or unknown:
        raise ValueError(f"validate_record: missing fields {missing}, unknown fields {unknown}")
    out = dict(record)
    for name, types in FIELDS.items():
        value = out[name]
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            value = out[name] = float(value)  # JSON writes 2.0 as 2.0, but be lenient
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise TypeError(
                f"validate_record: field {name!r} must be {'/'.join(t.__name__ for t in types)}"
                f", got {value!r}"
            )
    if out["schema"] != SCHEMA_VERSION:
        raise ValueError(f"validate_record: schema {out['schema']} is not version {SCHEMA_VERSION}")
    for name in _POSITIVE:
        if not (math.isfinite(out[name]) and out[name] > 0):
            raise ValueError(f"validate_record: {name} must be finite and > 0, got {out[name]}")
    if out["lo"] > out["hi"]:
        raise ValueError(f"validate_record: interval [{out['lo']}, {out['hi']}] has lo > hi")
    if not 0 < out["coverage"] < 1:
        raise ValueError(f"validate_record: coverage must lie in (0, 1), got {out['coverage']}")
    if out["rounds"] < 1 or out["threads"] < 1 or out["calls_per_round"] < 1:
        raise ValueError("validate_record: rounds, threads and calls_per_round must be >= 1")
    if out["verdict"] not in _VERDICT_WORDS:
        raise ValueError(f"validate_record: unknown verdict {out['verdict']!r}")
    check_texts("validate_record", RECORD, out)  # lengths, one line, no invisible characters
    return out


def make_record(
    c: Any, *, label: str | None = None, chapter: str | None = None, why: str | None = None
) -> dict:
    """The record of a comparison (anything with a :class:`Comparison`'s attributes).

    Args:
        c: the comparison.
        label: the label to record instead of ``c.label`` (a :func:`table` row's name).
        chapter: the chapter, or ``None`` (then :func:`emit` fills it in).
        why: the invariant partner to record instead of ``c.why`` (a :func:`table` row's).

    Raises:
        TypeError: when ``c`` lacks a comparison's attributes.
        ValueError: when the record fails :func:`validate_record`.
    """
    if not all(hasattr(c, a) for a in ("ratios", "interval", "baseline", "trick", "verdict")):
        raise TypeError(f"make_record: expected a Comparison, got {type(c).__name__}")
    lo, hi = c.interval
    return validate_record(
        {
            "schema": SCHEMA_VERSION,
            "label": c.label if label is None else label,
            "chapter": chapter,
            "device": c.device,
            "threads": c.threads,
            "baseline_s": float(c.baseline.median),
            "trick_s": float(c.trick.median),
            "ratio": float(c.ratio),
            "lo": float(lo),
            "hi": float(hi),
            "rounds": c.rounds,
            "coverage": float(c.coverage),
            "calls_per_round": c.calls_per_round,
            "checked": bool(c.checked),
            "verdict": c.verdict,
            "why": (getattr(c, "why", "") or "") if why is None else why,
        }
    )


def emit(record: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Path | None:
    """Append ``record`` as one JSON line to the file named by :data:`RECORDS_ENV`, if set.

    Args:
        record: a record (validated again here).
        environ: the environment to read (default ``os.environ``; for tests).

    Returns:
        The file appended to, or ``None`` when the variable is unset or empty (nothing done).

    Raises:
        TypeError, ValueError: from :func:`validate_record`.
    """
    env = os.environ if environ is None else environ
    target = env.get(RECORDS_ENV, "")
    if not target:
        return None
    out = validate_record(record)
    path = Path(target)
    if out["chapter"] is None:
        out["chapter"] = env.get(CHAPTER_ENV) or path.stem
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(out, sort_keys=True) + "\n")
    return path


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a JSON-lines file written by :func:`emit` (empty lines skipped).

    Raises:
        FileNotFoundError: when the file does not exist.
        ValueError: on a line that is not JSON or not a valid record (with its line number).
    """
    records = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(validate_record(json.loads(line)))
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            raise ValueError(f"read_records: {path} line {number}: {exc}") from exc
    return records
