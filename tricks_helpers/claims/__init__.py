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

from tricks_helpers.claims.claim import (
    CLAIM_FIELDS,
    HELD,
    NOT_DECIDED,
    NOT_HELD,
    STATUSES,
    UNDECIDED,
    Claim,
)
from tricks_helpers.claims.deciding import (
    EXPECTATIONS,
    NOT_SLOWER,
    Absent,
    Count,
    Trend,
    from_count,
    from_trend,
    from_verdicts,
    not_decided,
)
from tricks_helpers.claims.table import CLAIMS_ENV, Claims

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
