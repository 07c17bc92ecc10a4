"""One chapter's run, as every mode of the runner makes it: its kernel's environment, its
records and claims read back line by line, its outcome.

:func:`run_chapter` executes one notebook in memory with ``TRICKS_RECORDS`` and
``TRICKS_RECORDS_CHAPTER`` set (:func:`records_env`), reads what it recorded
(:func:`read_chapter_records`, :func:`read_chapter_claims`: a bad line fails that chapter only,
never the run) and writes the notebook back only when asked and every cell ran. Used by
``scripts.book.run_notebooks`` (every mode) and ``scripts.compat.gpu_run``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.book.machine_records import CAP_VARS
from scripts.book.notebook_run import execute_notebook
from tricks_helpers._io import atomic_target
from tricks_helpers.bench.records import CHAPTER_ENV, RECORDS_ENV, validate_record
from tricks_helpers.claims import CLAIM_FIELDS, CLAIMS_ENV, STATUSES
from tricks_helpers.fields import CLAIM, check_texts, one_line
from tricks_helpers.limits import RATES_ENV

__all__ = [
    "Outcome",
    "records_env",
    "INDUCTOR_CACHE_ENV",
    "inductor_cache_env",
    "claims_file",
    "read_chapter_claims",
    "read_chapter_records",
    "run_chapter",
]


@dataclass
class Outcome:
    """What running one notebook gave: its time, its first error, the records it wrote."""

    name: str
    seconds: float
    error: str = ""  # empty when every cell ran and every record was read
    records: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    nb: Any = field(default=None, repr=False, compare=False)  # the executed notebook, or None
    rates: dict[str, float] = field(default_factory=dict)  # limit name -> fastest rate held

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def stem(self) -> str:
        return Path(self.name).stem

    def status(self) -> dict[str, Any]:
        """The chapter's entry of a results file: ``{"status", "error", "seconds"}``."""
        return {
            "status": "ok" if self.ok else "failed",
            "error": one_line(self.error, 1000),  # a traceback's tab never fails the merge
            "seconds": round(self.seconds, 1),
        }

    def line(self, width: int) -> str:
        status = "ok" if self.ok else "FAILED"
        text = f"{self.name:<{width}}  {status:<6}  {self.seconds:6.1f} s"
        return f"{text}  {self.error}" if self.error else text


def records_env(records_file: Path, chapter: str, base: Mapping[str, str] | None = None) -> dict:
    """The kernel's environment: ``base`` (default ``os.environ``) plus the record variables:
    comparisons to ``records_file``, claims (``tricks_helpers.claims``) beside it."""
    env = {
        **(os.environ if base is None else base),
        RECORDS_ENV: str(records_file),
        CLAIMS_ENV: str(claims_file(records_file)),
        RATES_ENV: str(rates_file(records_file)),
        CHAPTER_ENV: chapter,
    }
    return {**env, **inductor_cache_env(env)}


INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"


def inductor_cache_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Where an instruction-set-capped run (:data:`CAP_VARS` set) keeps Inductor's compile cache:
    a folder of its own, named after the caps, unless ``TORCHINDUCTOR_CACHE_DIR`` is set.

    Inductor's cache does not key its compiled C++ on ``ATEN_CPU_CAPABILITY``: kernels built
    under ``default`` (no vectors) were reused by every later run of the machine, and chapter
    06's compiled GELU measured 0.5-0.7x eager instead of ~6x (2026-11-27). Returns ``{}`` when
    nothing is capped or the cache folder is already chosen.
    """
    caps = [f"{name}={environ[name]}" for name in CAP_VARS if environ.get(name)]
    if not caps or environ.get(INDUCTOR_CACHE_ENV):
        return {}
    slug = "-".join(caps).lower().replace("=", "_")
    user = "".join(ch for ch in os.environ.get("USER", "user") if ch.isalnum()) or "user"
    folder = Path(tempfile.gettempdir()) / f"torchinductor_{user}_capped_{slug}"
    return {INDUCTOR_CACHE_ENV: str(folder)}


def claims_file(records_file: Path) -> Path:
    """Where a chapter's claims go: beside its records file, ``<stem>.claims.jsonl``."""
    return Path(records_file).with_suffix(".claims.jsonl")


def rates_file(records_file: Path) -> Path:
    """Where a chapter's rates go (``tricks_helpers.limits``): ``<stem>.rates.jsonl``."""
    return Path(records_file).with_suffix(".rates.jsonl")


def read_chapter_rates(path: Path, chapter: str) -> dict[str, float]:
    """Limit name -> the fastest rate one chapter held against that limit (its lines of
    :data:`tricks_helpers.limits.RATES_ENV`'s file); lines cut off, not JSON, another
    chapter's or without a positive finite rate are skipped. A missing file holds none."""
    if not path.exists():
        return {}
    out: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
        try:
            item = json.loads(line)
            name, rate = item["name"], float(item["rate"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        if item.get("chapter") == chapter and isinstance(name, str) and 0 < rate < float("inf"):
            out[name] = max(out.get(name, 0.0), rate)
    return out


def read_chapter_claims(path: Path, chapter: str) -> tuple[list[dict[str, Any]], str]:
    """The claims one chapter's run recorded, and what was wrong with the others (a line cut
    off, not JSON, another chapter's, or not a claim); a missing file holds none."""
    if not path.exists():
        return [], ""
    claims, problems = [], []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            claim = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"claim line {number} is not JSON")
            continue
        if not isinstance(claim, dict) or set(claim) != set(CLAIM_FIELDS):
            problems.append(f"claim line {number} is not a claim")
        elif claim["chapter"] != chapter:
            problems.append(f"claim line {number} names chapter {claim['chapter']!r}")
        elif claim["status"] not in STATUSES or not isinstance(claim["measured"], bool):
            problems.append(f"claim line {number} has status {claim['status']!r}")
        else:
            try:  # what the results file takes (tricks_helpers.fields), checked as read
                check_texts(f"claim line {number}", CLAIM, claim)
            except (TypeError, ValueError) as exc:
                problems.append(f"{exc}")
                continue
            claims.append(claim)
    return claims, "; ".join(problems)


def read_chapter_records(path: Path, chapter: str) -> tuple[list[dict[str, Any]], str]:
    """The valid records of one chapter's records file, and what was wrong with the others.

    Unlike :func:`tricks_helpers.bench.records.read_records` this never raises on a bad line:
    a kernel that died while writing its last record leaves that line cut off (no newline),
    and the records before it are still the chapter's. A missing file holds no record.

    Returns:
        ``(records, problem)``: ``problem`` is ``""`` when every line was a valid record of
        ``chapter``, else one line naming each line dropped and why.
    """
    if not path.exists():
        return [], ""
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    records, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = validate_record(json.loads(line))
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            if number == len(lines):  # no newline after it: the write never finished
                problems.append(f"record line {number} cut off (the kernel stopped writing it)")
            else:
                problems.append(f"record line {number} dropped: {exc}")
            continue
        if record["chapter"] != chapter:
            problems.append(f"record line {number} names chapter {record['chapter']!r}")
            continue
        records.append(record)
    return records, "; ".join(problems)


def run_chapter(
    path: Path,
    *,
    write: bool = False,
    timeout: int = 600,
    environ: Mapping[str, str] | None = None,
) -> Outcome:
    """Execute one notebook with records on; write it back only if ``write`` and every cell ran.

    Never raises for the notebook's sake: a notebook that cannot be read, a failing cell, a
    timeout, a dead kernel or a damaged records file is the outcome's ``error`` (records
    written before the failure are kept in ``records``).
    """
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="records-") as tmp:
        records_file = Path(tmp) / f"{path.stem}.jsonl"
        env = records_env(records_file, path.stem, environ)
        done = execute_notebook(path, timeout=timeout, env=env)
        records, problem = read_chapter_records(records_file, path.stem)
        claims, claim_problem = read_chapter_claims(claims_file(records_file), path.stem)
        rates = read_chapter_rates(rates_file(records_file), path.stem)
        problem = "; ".join(p for p in (problem, claim_problem) if p)
    if write and done.ok and not problem:
        import nbformat

        with atomic_target(path) as tmp_path:  # a unique temporary, then a rename
            nbformat.write(done.nb, tmp_path)
    error = "; ".join(e for e in (done.error, problem) if e)
    return Outcome(path.name, done.seconds, error, records, claims, done.nb, rates)
