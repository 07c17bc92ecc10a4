"""A chapter's claims: declared beside their evidence, printed as one table, clause for the tip.

:class:`Claims` keeps a chapter's claims in the order the page declares them
(:meth:`Claims.record`), prints the claims table (:meth:`Claims.table`), hands the tip its one
clause (:meth:`Claims.tip_clause`, glued by :meth:`Claims.glue`) and, where :data:`CLAIMS_ENV`
names a file, appends each claim to it as one JSON line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

from tricks_helpers._checks import check_type
from tricks_helpers.bench.comparisons import Comparison
from tricks_helpers.bench.records import CHAPTER_ENV
from tricks_helpers.bench.verdicts import FASTER
from tricks_helpers.claims.claim import NOT_HELD, STATUSES, UNDECIDED, Claim
from tricks_helpers.claims.deciding import (
    Absent,
    Count,
    Trend,
    from_count,
    from_trend,
    from_verdicts,
    not_decided,
)
from tricks_helpers.quoting import quoted

__all__ = ["Claims", "CLAIMS_ENV"]

CLAIMS_ENV = "TRICKS_CLAIMS"
"""The environment variable naming the JSON-lines file each decided claim is appended to."""


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

    def record(
        self,
        key: str,
        advice: str,
        decided_by: Comparison
        | Iterable[Comparison]
        | Mapping[object, Comparison]
        | Count
        | Trend
        | Absent,
        *,
        condition: str | None = None,
        expect: str = FASTER,
        condition_holds: bool = True,
        missing: str = "",
        outside: str = "",
    ) -> Claim:
        """Declare and decide one claim in the cell that prints its evidence; return it.

        ``decided_by`` is what the cell just printed: a comparison or several (decided by
        :func:`from_verdicts` with ``expect``, ``condition_holds``, ``missing``, ``outside``),
        a :class:`Count` (:func:`from_count`), a :class:`Trend` (:func:`from_trend`) or an
        :class:`Absent` condition (:func:`not_decided`). ``condition`` defaults to ``"any
        CPU"`` for timings and ``"any machine"`` for counts. The table at the chapter's end
        prints the claims in the order they were recorded. Recording a key again with the same
        advice (a reader re-running the cell in Jupyter or Colab) replaces that claim in its
        place; the table shows the latest decision.

        Raises:
            TypeError: on a ``decided_by`` of another kind.
            ValueError: as the deciding function does, or when ``key`` was recorded before
                with other advice (two claims sharing one key).
        """
        if condition is not None:
            check_type("Claims.record", "condition", condition, str)
        if isinstance(decided_by, (Count, Trend)):  # a counted fact or a measured trend
            counted = isinstance(decided_by, Count)
            made, default = (from_count, "any machine") if counted else (from_trend, "any CPU")
            holds, evidence = decided_by.holds, decided_by.evidence
            claim = made(key, advice, holds, evidence, condition=condition or default)
        elif isinstance(decided_by, Absent):
            if condition is None:
                raise ValueError(f"Claims.record: {key!r}: an absent condition must be named")
            absent = decided_by
            claim = not_decided(
                key, advice, condition=condition, missing=absent.missing, outside=absent.outside
            )
        elif isinstance(decided_by, (Comparison, Iterable, Mapping)) and not isinstance(
            decided_by, (str, bytes)
        ):
            found = [decided_by] if isinstance(decided_by, Comparison) else decided_by
            claim = from_verdicts(
                key,
                advice,
                found,
                expect=expect,
                condition=condition or "any CPU",
                condition_holds=condition_holds,
                missing=missing,
                outside=outside,
            )
        else:
            raise TypeError(
                f"Claims.record: {key!r}: decided_by must be comparison(s), a Count, a Trend or "
                f"an Absent condition, got {type(decided_by).__name__}"
            )
        earlier = self._claims.get(key)
        if earlier is not None and earlier.advice == claim.advice:
            self._claims[key] = claim  # the same declaration re-run: keeps its place
            return claim
        return self.add(claim)

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
        dangling = [c.key for c in self if c.outside and c.outside not in self._claims]
        if dangling:
            raise ValueError(
                f"Claims.table: {dangling} name an outside claim that was never recorded: "
                "declare the outcome measured without the condition as its own claim"
            )
        lines = [f"claims decided by this run: {self._count_text()}"]
        for claim in self:
            lines.extend(claim.lines())
        return "\n".join(lines)

    def tip_clause(self) -> str:
        """One clause for the tip: the counts, and each advice this run did not bear out, in
        its words (quoted with typographic quotes, so the clause holds no ``'`` or ``"``: the
        sanitize file masks it up to the first one)."""
        if not self._claims:
            raise ValueError(f"Claims.tip_clause: {self.chapter!r} has no claims")
        text = f"On this run: {self._count_text()}"
        failed = [quoted(c.advice) for c in self if c.status == NOT_HELD]
        if failed:
            text += f"; not held here: {', '.join(failed)}"
        open_ = [quoted(c.advice) for c in self if c.status == UNDECIDED]
        if open_:
            text += f"; undecided: {', '.join(open_)}"
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
