"""One claim: a piece of advice, its condition, and the status this run gave it (every chapter).

A :class:`Claim` is made by the deciding functions (:mod:`tricks_helpers.claims.deciding`) and
printed by the chapter's table (:mod:`tricks_helpers.claims.table`); :meth:`Claim.record` is
what a machine's results file keeps of it (:data:`CLAIM_FIELDS`). The four statuses are
described in :mod:`tricks_helpers.claims`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tricks_helpers._checks import check_bool, check_choice, check_type
from tricks_helpers.fields import CLAIM, check_text, check_texts

__all__ = ["HELD", "NOT_HELD", "UNDECIDED", "NOT_DECIDED", "STATUSES", "Claim", "CLAIM_FIELDS"]

HELD = "HELD"
NOT_HELD = "NOT HELD HERE"
UNDECIDED = "UNDECIDED"
NOT_DECIDED = "NOT DECIDED HERE"
STATUSES = (HELD, NOT_HELD, UNDECIDED, NOT_DECIDED)

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
    outside: str = field(default="", compare=False)
    """For a NOT DECIDED claim: the key of the claim that decides what the page measured
    without the condition (checked by :meth:`Claims.table`); not part of the record."""

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
        check_type("Claim", "outside", self.outside, str)
        if self.outside and (self.status != NOT_DECIDED or not _KEY.fullmatch(self.outside)):
            raise ValueError(
                f"Claim: outside names the claim deciding a case measured without the "
                f"condition: only a {NOT_DECIDED} claim has one, and it is a key; got "
                f"{self.outside!r} on a {self.status} claim"
            )

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
