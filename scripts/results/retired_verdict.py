"""The verdict word the book printed before its four verdicts, read as its interval decides now.

A results file or stored output written by the three-verdict book says ``NO CLEAR DIFFERENCE``;
every reader re-decides it from its interval (:func:`redecide`): the results page's rows
(``scripts.results.rows``), the one reader of results files
(``machine_records.read_results``, through :func:`upgrade_verdicts`) and the notebook audit's
verdict words.
"""

from __future__ import annotations

from typing import Any

from tricks_helpers.bench import FASTER, NOISE_THRESHOLD, SLOWER, UNDECIDED, VERDICTS, decide

__all__ = ["RETIRED_VERDICT", "redecide", "upgrade_verdicts"]

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
