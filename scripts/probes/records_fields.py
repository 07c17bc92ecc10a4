"""Cases of :mod:`scripts.probes.records`: what a record, a claim and a skipped line may hold.

``tricks_helpers.fields`` and its users make each one and refuse a bad value at once: a label,
a why, an advice or a section line over its length, with a control, invisible or bidirectional
character, or blank; a claim's key or status out of its set.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.probes.harness import ERROR


def comparison(label: str = "x", speedup: float = 2.0) -> Any:
    """A comparison of six rounds at ``speedup`` (not shown): the source of a valid record."""
    from tricks_helpers import bench

    return bench.comparison_from_times(
        label, [speedup * 1e-3] * 6, [1e-3] * 6, threads=1, show=False
    )


def _record(**change: Any) -> Any:
    from tricks_helpers.bench.records import validate_record

    return validate_record({**comparison().record(chapter="01_x"), **change})


def _claim(**change: Any) -> Any:
    from tricks_helpers import claims

    args = {"key": "k", "advice": "a", "condition": "any CPU", "status": claims.HELD}
    args.update(evidence="e", measured=False)
    args.update(change)
    return claims.Claim(**args)


def _skipped(section: str = "int4", needs: str = "torchao >= 0.18", have: str = "0.16") -> Any:
    import io

    from tricks_helpers import notebook

    return notebook.skipped(section, needs, have, stream=io.StringIO())


def field_cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """``(label, call(tmp), expect)``: ``expect`` is ERROR or a check of the result."""
    from tricks_helpers import claims, fields

    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    add = c.append
    # ---- what a record, a claim, a skipped line may hold (made, refused at once)
    for name, bad in [
        ("301 characters", "x" * 301),
        ("a tab", "a\tb"),
        ("a carriage return", "a\rb"),
        ("a zero-width space", "a\u200bb"),
        ("a right-to-left override", "a\u202eb"),
        ("a bidi isolate", "a\u2067b"),
        ("a byte-order mark", "a\ufeffb"),
        ("a C1 control", "a\x85b"),
        ("only blanks", "   "),
    ]:
        add((f"validate_record label {name}", lambda t, b=bad: _record(label=b), ERROR))
        add((f"compare label {name}", lambda t, b=bad: comparison(b), ERROR))
        add((f"Claim advice {name}", lambda t, b=bad: _claim(advice=b), ERROR))
    add(("validate_record label 300 characters", lambda t: _record(label="x" * 300), bool))
    add(("validate_record why 301", lambda t: _record(why="w" * 301), ERROR))
    add(("validate_record chapter ../x", lambda t: _record(chapter="../x"), ERROR))
    add(("validate_record device a tag", lambda t: _record(device="<b>cpu</b>"), ERROR))
    add(("Claim condition 201", lambda t: _claim(condition="c" * 201), ERROR))
    add(("Claim status MAYBE", lambda t: _claim(status="MAYBE"), ERROR))
    add(("Claim key with a space", lambda t: _claim(key="a b"), ERROR))
    add(("Claim.record chapter a/b", lambda t: _claim().record("a/b"), ERROR))
    add(("Claim.record chapter None", lambda t: _claim().record(None), ERROR))
    long_pair = [comparison("s" * 200, 0.5), comparison("t" * 200, 0.5)]
    add(
        (
            "from_verdicts two long labels",
            lambda t: claims.from_verdicts("k", "a", long_pair),
            ERROR,
        )
    )
    add(("skipped section 201", lambda t: _skipped(section="s" * 201), ERROR))
    add(("skipped needs with a tab", lambda t: _skipped(needs="a\tb"), ERROR))
    add(("skipped reason over 300", lambda t: _skipped(needs="n" * 150, have="h" * 150), ERROR))
    add(("skipped a fine line", lambda t: _skipped(), lambda got: got.startswith("[skipped] ")))
    add(("one_line a tab and bidi", lambda t: fields.one_line("a\t\u202eb", 10), "a b".__eq__))
    add(("one_line None", lambda t: fields.one_line(None, 10), ERROR))
    return c
