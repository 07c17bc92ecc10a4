"""Advice as claims that this run decides (every chapter).

A chapter states each piece of advice it gives once, as a :class:`Claim`: the sentence a reader
takes away, the condition under which it is expected to hold (hardware, size, batch), and what
decides it on *this* run. The book is re-executed on CPUs of different kinds, so advice is never
left standing as prose: the page prints, from the run's own numbers, one of four statuses.

- :data:`HELD`: the condition holds here and a *decided* verdict (FASTER, SLOWER, SAME) or a
  count agrees with the advice ("costs nothing" holds only on SAME);
- :data:`NOT_HELD`: the condition holds here and a decided verdict or a count contradicts it
  (the evidence line names the verdicts or the count that did);
- :data:`UNDECIDED`: the condition holds here but a verdict is UNDECIDED (its interval
  straddles a threshold) and none contradicts the advice: printed with its interval;
- :data:`NOT_DECIDED`: the condition is absent here (no GPU, no native bf16...) *and* the page
  measured nothing of the case. Where the page did time the case without the condition, that
  outcome is its own claim (``outside=`` names it; :func:`from_verdicts` refuses otherwise).

Speed verdicts (:func:`from_verdicts`) and trends of them (:func:`from_trend`) are
measurements: their status is masked for nbval like a verdict word. A counted fact
(:func:`from_count`) is an invariant: its evidence line is compared. A chapter declares each
claim in the cell that prints its evidence (:meth:`Claims.record`, deciding it from a
comparison, a :class:`Count`, a :class:`Trend` or an :class:`Absent` condition); the claims
table at its end only prints what was declared (:meth:`Claims.table`) and hands the tip its one
clause
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
from dataclasses import dataclass, field

from tricks_helpers._checks import check_bool, check_choice, check_type
from tricks_helpers.bench.comparisons import Comparison
from tricks_helpers.bench.records import CHAPTER_ENV
from tricks_helpers.bench.verdicts import FASTER, NOISE_THRESHOLD, SAME, SLOWER
from tricks_helpers.bench.verdicts import UNDECIDED as _UNDECIDED_VERDICT
from tricks_helpers.fields import CLAIM, check_text, check_texts

__all__ = [
    "HELD",
    "NOT_HELD",
    "UNDECIDED",
    "NOT_DECIDED",
    "STATUSES",
    "NOT_SLOWER",
    "EXPECTATIONS",
    "Claim",
    "Claims",
    "Count",
    "Trend",
    "Absent",
    "from_verdicts",
    "from_count",
    "from_trend",
    "not_decided",
    "CLAIMS_ENV",
    "CLAIM_FIELDS",
]

HELD = "HELD"
NOT_HELD = "NOT HELD HERE"
UNDECIDED = "UNDECIDED"
NOT_DECIDED = "NOT DECIDED HERE"
STATUSES = (HELD, NOT_HELD, UNDECIDED, NOT_DECIDED)

NOT_SLOWER = "not SLOWER"
"""The expectation of advice that a trick costs no time ("costs no time", "not slower than"):
met where the whole interval lies at or above ``1 / NOISE_THRESHOLD`` (SAME or FASTER: decidedly
not slower), missed on SLOWER, UNDECIDED where the interval reaches below ``1 / NOISE_THRESHOLD``
without lying wholly there. Advice that the speed does not change ("changes no speed")
expects SAME, which a FASTER verdict misses."""

EXPECTATIONS = (FASTER, SLOWER, SAME, NOT_SLOWER)

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


def _quoted(advice: str) -> str:
    """``advice`` between typographic quotes, its own quote marks made typographic."""
    return "\u201c" + advice.replace("'", "\u2019").replace('"', "\u201d") + "\u201d"


def _verdict_text(c: Comparison) -> str:
    return f"{c.verdict} {c.speedup_text()} {c.label}"


def _listed(items: list[Comparison]) -> str:
    shown = "; ".join(_verdict_text(c) for c in items[:2])
    return shown + (f" (+{len(items) - 2} more)" if len(items) > 2 else "")


def _meets(c: Comparison, expect: str) -> bool | None:
    """Whether ``c`` meets ``expect``: True, False, or None where its interval decides nothing."""
    if expect == NOT_SLOWER:
        lo, hi = c.interval
        floor = 1 / NOISE_THRESHOLD
        return True if lo >= floor else False if hi <= floor else None
    return None if c.verdict == _UNDECIDED_VERDICT else c.verdict == expect


def not_decided(key: str, advice: str, *, condition: str, missing: str, outside: str = "") -> Claim:
    """A claim whose condition is absent on this machine and whose case the page did not time.

    Args:
        missing: what this machine lacks, in words (``"no CUDA device"``).
        outside: where the page *did* time the case without the condition, the key of the
            claim that decides that outcome (it must be in the same table); the evidence line
            names it.
    """
    check_type("not_decided", "missing", missing, str)
    check_type("not_decided", "outside", outside, str)
    evidence = f"{missing}; measured here without it: claim {outside}" if outside else missing
    return Claim(key, advice, condition, NOT_DECIDED, evidence, measured=False, outside=outside)


def from_verdicts(
    key: str,
    advice: str,
    comparisons: Iterable[Comparison] | Mapping[object, Comparison],
    *,
    expect: str = FASTER,
    condition: str = "any CPU",
    condition_holds: bool = True,
    missing: str = "",
    outside: str = "",
) -> Claim:
    """Decide a speed claim from this run's verdicts, one verdict per (baseline, trick) pair.

    Only a decided verdict decides: the claim is :data:`NOT_HELD` when any comparison's verdict
    is decided (FASTER, SLOWER, SAME) and differs from ``expect`` (the evidence names them);
    else :data:`UNDECIDED` when any is UNDECIDED (named with its interval); else :data:`HELD`.
    Verdicts are never pooled: each pair is judged on its own interval. "Changes no speed"
    expects SAME; "costs no time" expects :data:`NOT_SLOWER`, decided from the interval.

    Args:
        comparisons: the deciding :class:`~tricks_helpers.bench.Comparison` objects (a dict's
            values are used).
        expect: the verdict the advice predicts for every comparison (one of
            :data:`EXPECTATIONS`).
        condition: where the advice is meant to hold.
        condition_holds: False when this machine lacks the condition. These comparisons then
            timed the case *without* it: that outcome must be its own claim, named by
            ``outside``; this one is :data:`NOT_DECIDED` and says where the outcome went.
        missing: with ``condition_holds=False``, what is missing (required then).
        outside: with ``condition_holds=False``, the key of the claim deciding what was
            measured here (required then).

    Raises:
        TypeError: when a comparison is not a Comparison.
        ValueError: on no comparisons, an unknown ``expect``, or with ``condition_holds=False``
            a missing ``missing`` or ``outside``.
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
        if not outside:
            raise ValueError(
                f"from_verdicts: claim {key!r}: the condition is absent but {len(found)} "
                f"comparison(s) timed the case here ({_listed(found)}); decide that outcome as "
                "its own claim and name it with outside=, or use not_decided() where nothing "
                "of the case was timed"
            )
        return not_decided(key, advice, condition=condition, missing=missing, outside=outside)
    if outside:
        raise ValueError(f"from_verdicts: claim {key!r}: outside= only with condition_holds=False")
    met = {id(c): _meets(c, expect) for c in found}
    misses = [c for c in found if met[id(c)] is False]
    if misses:
        missed = SLOWER if expect == NOT_SLOWER else f"not {expect}"
        evidence = f"{len(misses)} of {len(found)} {missed}: {_listed(misses)}"
        return Claim(key, advice, condition, NOT_HELD, evidence, measured=True)
    open_ = [c for c in found if met[id(c)] is None]
    if open_:
        evidence = f"{len(open_)} of {len(found)} UNDECIDED, expected {expect}: {_listed(open_)}"
        return Claim(key, advice, condition, UNDECIDED, evidence, measured=True)
    if len(found) == 1:
        evidence = _verdict_text(found[0])
        if expect == NOT_SLOWER and found[0].verdict not in (SAME, FASTER):
            # UNDECIDED about a gain, yet its whole interval lies at or above 1/1.1
            evidence = f"not SLOWER (interval >= {1 / NOISE_THRESHOLD:.2f}): {evidence}"
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


def from_trend(
    key: str,
    advice: str,
    holds: bool,
    evidence: str,
    *,
    condition: str = "any CPU",
) -> Claim:
    """Decide a claim from a measured trend that no single verdict is (``the gain grows with
    the width``): a measurement, so its status and evidence are masked like a verdict's.

    Args:
        holds: whether the trend agrees with the advice; None when this run's verdicts do
            not decide the trend (an UNDECIDED verdict among them): the claim is UNDECIDED.
        evidence: the verdicts the trend was read from, with their intervals.
    """
    if holds is not None:
        check_bool("from_trend", "holds", holds)
    status = UNDECIDED if holds is None else (HELD if holds else NOT_HELD)
    return Claim(key, advice, condition, status, evidence, measured=True)


@dataclass(frozen=True)
class Count:
    """What decides a claim declared with :meth:`Claims.record`: a counted fact (an
    invariant; see :func:`from_count`)."""

    holds: bool
    evidence: str


@dataclass(frozen=True)
class Trend:
    """What decides a claim declared with :meth:`Claims.record`: a measured trend (see
    :func:`from_trend`); ``holds=None`` when this run's verdicts do not decide it."""

    holds: bool | None
    evidence: str


@dataclass(frozen=True)
class Absent:
    """What decides a claim declared with :meth:`Claims.record`: nothing, the condition is
    absent here and the page timed nothing of the case (see :func:`not_decided`)."""

    missing: str
    outside: str = ""


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
        if isinstance(decided_by, Count):
            claim = from_count(
                key,
                advice,
                decided_by.holds,
                decided_by.evidence,
                condition=condition or "any machine",
            )
        elif isinstance(decided_by, Trend):
            claim = from_trend(
                key,
                advice,
                decided_by.holds,
                decided_by.evidence,
                condition=condition or "any CPU",
            )
        elif isinstance(decided_by, Absent):
            if condition is None:
                raise ValueError(f"Claims.record: {key!r}: an absent condition must be named")
            claim = not_decided(
                key,
                advice,
                condition=condition,
                missing=decided_by.missing,
                outside=decided_by.outside,
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
        failed = [_quoted(c.advice) for c in self if c.status == NOT_HELD]
        if failed:
            text += f"; not held here: {', '.join(failed)}"
        open_ = [_quoted(c.advice) for c in self if c.status == UNDECIDED]
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
