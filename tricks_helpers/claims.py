"""Advice as claims that this run decides (every chapter).

A chapter states each piece of advice it gives once, as a :class:`Claim`: the sentence a reader
takes away, the condition under which it is expected to hold (hardware, size, batch), and what
decides it on *this* run. The book is re-executed on CPUs of different kinds, so advice is never
left standing as prose: the page prints, from the run's own numbers, one of three statuses.

- :data:`HELD`: the condition holds here and the evidence agrees with the advice;
- :data:`NOT_HELD`: the condition holds here and the evidence contradicts the advice (the
  evidence line names the verdicts or the count that did);
- :data:`NOT_DECIDED`: the condition is absent here (no GPU, no native bf16...), so this run
  says nothing either way; the evidence line says which condition is missing.

Two kinds of evidence decide a claim: speed verdicts (:func:`from_verdicts`, a measurement: its
status is masked for nbval like a verdict word) and a counted fact (:func:`from_count`, an
invariant: its evidence line is compared). :class:`Claims` gathers a chapter's claims, prints
the claims table at its end (:meth:`Claims.table`) and hands the tip its one clause
(:meth:`Claims.tip_clause`, glued into the tip by :meth:`Claims.glue`). Where the environment
variable :data:`CLAIMS_ENV` (``TRICKS_CLAIMS``, set by the book's runner) names a file,
:meth:`Claims.glue` also appends each claim to it as one JSON line (:meth:`Claim.record`), so a
machine's results file holds the claims its run decided; without it nothing is written.

Importing this module changes no global state.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tricks_helpers._checks import check_bool, check_choice, check_type
from tricks_helpers.bench.records import CHAPTER_ENV
from tricks_helpers.bench.verdicts import (
    FASTER,
    NO_CLEAR_DIFFERENCE,
    SLOWER,
    Comparison,
)
from tricks_helpers.fields import CLAIM, check_text, check_texts

__all__ = [
    "HELD",
    "NOT_HELD",
    "NOT_DECIDED",
    "STATUSES",
    "NOT_SLOWER",
    "EXPECTATIONS",
    "Claim",
    "Claims",
    "from_verdicts",
    "from_count",
    "not_decided",
    "CLAIMS_ENV",
    "CLAIM_FIELDS",
]

HELD = "HELD"
NOT_HELD = "NOT HELD HERE"
NOT_DECIDED = "NOT DECIDED HERE"
STATUSES = (HELD, NOT_HELD, NOT_DECIDED)

NOT_SLOWER = "not SLOWER"
"""An expectation: the trick costs nothing measurable (FASTER or NO CLEAR DIFFERENCE)."""

EXPECTATIONS = (FASTER, SLOWER, NO_CLEAR_DIFFERENCE, NOT_SLOWER)

CLAIMS_ENV = "TRICKS_CLAIMS"
"""The environment variable naming the JSON-lines file each decided claim is appended to."""

CLAIM_FIELDS = ("chapter", "key", "advice", "condition", "status", "evidence", "measured")
"""The fields of a claim's record (:meth:`Claim.record`), in order."""

_WIDTH = max(len(s) for s in STATUSES)
_KEY = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")


@dataclass(frozen=True)
class Claim:
    """One piece of advice and what this run says about it.

    Attributes:
        key: a short, unique name within the chapter (``"int8-compile"``): letters, digits
            and hyphens; the table and the tip's clause name the claim by it.
        advice: the sentence the tip or summary gives, in a reader's words.
        condition: where the advice is meant to hold (``"any CPU"``, ``"native bf16"``).
        status: one of :data:`STATUSES`.
        evidence: what decided it, one line (verdicts, a count, or the missing condition).
        measured: True when a measurement (speed verdicts) decided it; its status and
            evidence then differ from machine to machine and are not compared by nbval.
    """

    key: str
    advice: str
    condition: str
    status: str
    evidence: str
    measured: bool

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.fullmatch(self.key):
            raise ValueError(f"Claim: key must be letters, digits and hyphens, got {self.key!r}")
        for name in ("key", "advice", "condition", "evidence"):
            value = check_type("Claim", name, getattr(self, name), str)
            if not value.strip() or "\n" in value:
                raise ValueError(f"Claim: {name} must be one non-empty line, got {value!r}")
        check_choice("Claim", "status", self.status, STATUSES)
        check_bool("Claim", "measured", self.measured)
        check_texts("Claim", CLAIM, self.__dict__)  # the results file's limits, named

    def lines(self) -> list[str]:
        """The claim as the table prints it: status and advice, then its evidence."""
        kind = (
            "condition absent"
            if self.status == NOT_DECIDED
            else ("measured" if self.measured else "counted")
        )
        return [
            f"  {self.status:<{_WIDTH}}  {self.key}: {self.advice} [{self.condition}]",
            f"    {kind}: {self.evidence}",
        ]

    def record(self, chapter: str) -> dict:
        """This claim as a plain dict with :data:`CLAIM_FIELDS` (for a results file)."""
        check_text("Claim.record", "chapter", chapter, CLAIM["chapter"])
        return {"chapter": chapter, **{k: getattr(self, k) for k in CLAIM_FIELDS[1:]}}


def _meets(verdict: str, expect: str) -> bool:
    if expect == NOT_SLOWER:
        return verdict != SLOWER
    return verdict == expect


def _verdict_text(c: Comparison) -> str:
    return f"{c.verdict} {c.speedup_text()} {c.label}"


def not_decided(key: str, advice: str, *, condition: str, missing: str) -> Claim:
    """A claim whose condition is absent on this machine: nothing measured decides it.

    Args:
        missing: what this machine lacks, in words (``"no CUDA device"``).
    """
    check_type("not_decided", "missing", missing, str)
    return Claim(key, advice, condition, NOT_DECIDED, missing, measured=False)


def from_verdicts(
    key: str,
    advice: str,
    comparisons: Iterable[Comparison] | Mapping[object, Comparison],
    *,
    expect: str = FASTER,
    condition: str = "any CPU",
    condition_holds: bool = True,
    missing: str = "",
) -> Claim:
    """Decide a speed claim from this run's verdicts, one verdict per (baseline, trick) pair.

    The claim holds when **every** comparison's verdict meets ``expect`` (FASTER, SLOWER,
    NO CLEAR DIFFERENCE, or :data:`NOT_SLOWER`); the evidence then counts them, or names each
    comparison that missed. Verdicts are never pooled: each pair is judged on its own interval.

    Args:
        comparisons: the deciding :class:`~tricks_helpers.bench.Comparison` objects (a dict's
            values are used).
        expect: the verdict the advice predicts for every comparison.
        condition: where the advice is meant to hold.
        condition_holds: False when this machine lacks the condition: the claim is then
            :data:`NOT_DECIDED` whatever was measured.
        missing: with ``condition_holds=False``, what is missing (required then).

    Raises:
        TypeError: when a comparison is not a Comparison.
        ValueError: on no comparisons, an unknown ``expect``, or a missing ``missing``.
    """
    check_choice("from_verdicts", "expect", expect, EXPECTATIONS)
    check_bool("from_verdicts", "condition_holds", condition_holds)
    found = list(comparisons.values() if isinstance(comparisons, Mapping) else comparisons)
    if not found:
        raise ValueError(f"from_verdicts: claim {key!r} needs at least one comparison")
    for c in found:
        check_type("from_verdicts", "comparison", c, Comparison)
    if not condition_holds:
        if not missing:
            raise ValueError(
                f"from_verdicts: claim {key!r} has condition_holds=False: say what is `missing`"
            )
        return not_decided(key, advice, condition=condition, missing=missing)
    misses = [c for c in found if not _meets(c.verdict, expect)]
    if misses:
        shown = "; ".join(_verdict_text(c) for c in misses[:2])
        more = f" (+{len(misses) - 2} more)" if len(misses) > 2 else ""
        missed = SLOWER if expect == NOT_SLOWER else f"not {expect}"
        evidence = f"{len(misses)} of {len(found)} {missed}: {shown}{more}"
        return Claim(key, advice, condition, NOT_HELD, evidence, measured=True)
    if len(found) == 1:
        evidence = _verdict_text(found[0])
    else:
        evidence = f"{len(found)} of {len(found)} {expect}"
    return Claim(key, advice, condition, HELD, evidence, measured=True)


def from_count(
    key: str,
    advice: str,
    holds: bool,
    evidence: str,
    *,
    condition: str = "any machine",
) -> Claim:
    """Decide a claim from a counted fact (bytes, FLOPs, op counts, equal streams).

    The evidence is compared by nbval, so it names only device-independent facts.

    Args:
        holds: whether the counted fact agrees with the advice.
        evidence: the count, in words (``"weight bytes 0.25x float32's"``).
    """
    check_bool("from_count", "holds", holds)
    return Claim(key, advice, condition, HELD if holds else NOT_HELD, evidence, measured=False)


class Claims:
    """A chapter's claims, in the order the page states them.

    Args:
        chapter: the chapter's number and title, as its heading says (``"07 · Quantization"``).
    """

    def __init__(self, chapter: str) -> None:
        self.chapter = check_type("Claims", "chapter", chapter, str)
        self._claims: dict[str, Claim] = {}

    def add(self, claim: Claim) -> Claim:
        """Add one decided claim and return it.

        Raises:
            TypeError: when ``claim`` is not a :class:`Claim`.
            ValueError: when its key was added before.
        """
        check_type("Claims.add", "claim", claim, Claim)
        if claim.key in self._claims:
            raise ValueError(f"Claims.add: claim {claim.key!r} was added before")
        self._claims[claim.key] = claim
        return claim

    def __getitem__(self, key: str) -> Claim:
        return self._claims[key]

    def __iter__(self):
        return iter(self._claims.values())

    def __len__(self) -> int:
        return len(self._claims)

    def counts(self) -> dict[str, int]:
        """How many claims have each status (every status present, zeros included)."""
        out = dict.fromkeys(STATUSES, 0)
        for claim in self:
            out[claim.status] += 1
        return out

    def _count_text(self) -> str:
        counts = self.counts()
        return ", ".join(f"{n} {status.lower()}" for status, n in counts.items())

    def table(self) -> str:
        """The claims table: a header with the counts, then each claim and its evidence.

        Raises:
            ValueError: when no claim was added.
        """
        if not self._claims:
            raise ValueError(f"Claims.table: {self.chapter!r} has no claims")
        lines = [f"claims decided by this run: {self._count_text()}"]
        for claim in self:
            lines.extend(claim.lines())
        return "\n".join(lines)

    def tip_clause(self) -> str:
        """One clause for the tip: the counts, and each advice this run did not bear out."""
        if not self._claims:
            raise ValueError(f"Claims.tip_clause: {self.chapter!r} has no claims")
        text = f"On this run: {self._count_text()}"
        failed = [c.key for c in self if c.status == NOT_HELD]
        if failed:
            text += f"; not held here: {', '.join(failed)}"
        return text + "."

    def glue(self, name: str, environ: Mapping[str, str] | None = None) -> str:
        """Glue :meth:`tip_clause` under ``name`` for the tip's ``{glue:text}`` role, and record
        every claim where :data:`CLAIMS_ENV` names a file (one JSON line each, chapter from
        ``TRICKS_RECORDS_CHAPTER`` or the file's stem).

        Where myst-nb is not installed (Colab) nothing is glued; the clause is returned either way.
        """
        clause = self.tip_clause()
        env = os.environ if environ is None else environ
        target = env.get(CLAIMS_ENV, "")
        if target:
            chapter = env.get(CHAPTER_ENV) or os.path.splitext(os.path.basename(target))[0]
            with open(target, "a", encoding="utf-8") as f:
                for claim in self:
                    f.write(json.dumps(claim.record(chapter), sort_keys=True) + "\n")
        try:
            from myst_nb import glue
        except ImportError:  # a reader's Colab: the page's tip is not rendered there
            return clause
        glue(name, clause, display=False)
        return clause
