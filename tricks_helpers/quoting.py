"""Advice as the tip names it: between typographic quotes (every chapter, and the audits).

The tip's clause (:meth:`tricks_helpers.claims.Claims.tip_clause`) names each advice this run
did not bear out in its own words, quoted so that the clause holds no ``'`` or ``"`` (the
sanitize file masks a glued clause up to the first one); the notebook audit
(``scripts/audits/claims.py``) looks for the same words in the stored tip. Both quote through
:func:`quoted`. Only the standard library is imported, so the audit reads it without torch.
"""

from __future__ import annotations

__all__ = ["quoted"]


def quoted(advice: str) -> str:
    """``advice`` between typographic quotes, its own quote marks made typographic.

    ``don't "guess"`` becomes ``\u201cdon\u2019t \u201dguess\u201d\u201d``: no ASCII quote is left.

    Raises:
        TypeError: on an ``advice`` that is not a string.
    """
    if not isinstance(advice, str):
        raise TypeError(f"quoted: advice must be a str, got {type(advice).__name__}")
    return "\u201c" + advice.replace("'", "\u2019").replace('"', "\u201d") + "\u201d"
