"""compare_many's settle=: rounds added while a pair the page decides is UNDECIDED (issue 39)."""

import pytest
from test_timing import UNDECIDED_SIX  # six ratios whose interval straddles the threshold

from tricks_helpers import bench


def scripted_many(monkeypatch, ratios):
    """A compare_many() of baseline "b", trick "t" and a third candidate "c", whose round i
    measures b at 1 ms, t at 1 ms / ratios[i] and c at 1 ms."""
    from tricks_helpers.bench import timing

    seq = iter(ratios)

    def b():
        return None

    def t():
        return None

    def c():
        return None

    def fake_time_once(where, fn, number, dev):
        return 1e-3 / next(seq) if fn is t else 1e-3

    monkeypatch.setattr(timing, "time_once", fake_time_once)

    def run(**kw):
        return bench.compare_many(
            "x", {"b": b, "t": t, "c": c}, rounds=6, warmup=0, device="cpu", **kw
        )

    return run


def test_compare_many_adds_rounds_while_a_settled_pair_is_undecided(monkeypatch, sanitize):
    fixed = scripted_many(monkeypatch, UNDECIDED_SIX)()
    plain = fixed.compare("t vs b", ("b", "t"), show=False)
    assert plain.verdict == bench.UNDECIDED and plain.rounds == 6 and not plain.adaptive
    more = scripted_many(monkeypatch, UNDECIDED_SIX + [1.0] * 20)(
        settle=[("b", "t")], more_rounds=20
    )
    settled = more.compare("t vs b", ("b", "t"), show=False)
    assert settled.verdict == bench.SAME and 6 < settled.rounds < 26 and settled.adaptive
    # every candidate got the added rounds, and every pair's round count prints as measured
    assert len({len(ts) for ts in more.times.values()}) == 1
    other = more.compare("c vs b", ("b", "c"), show=False)
    assert other.adaptive and f"~{other.rounds} rounds, ~" in other.details()
    decided = scripted_many(monkeypatch, [1.0] * 6)(settle=[("b", "t")], more_rounds=20)
    assert len(decided.times["t"]) == 6  # decided at once: no round added
    assert sanitize(decided.compare("t", ("b", "t"), show=False).details()) == sanitize(
        settled.details()
    )


def test_compare_many_settle_stops_at_its_budget_and_refuses_bad_input(monkeypatch):
    run = scripted_many(monkeypatch, [0.8, 1.2] * 50)
    c = run(settle=[("b", "t")], more_rounds=10).compare("t", ("b", "t"), show=False)
    assert c.verdict == bench.UNDECIDED and c.rounds == 16  # all ten added, still undecided
    with pytest.raises(ValueError, match="settle and more_rounds go together"):
        run(settle=[("b", "t")])
    with pytest.raises(ValueError, match="settle and more_rounds go together"):
        run(more_rounds=3)
    with pytest.raises(ValueError, match="more_rounds"):
        run(settle=[("b", "t")], more_rounds=-1)
    with pytest.raises(ValueError, match="budget_s"):
        run(settle=[("b", "t")], more_rounds=1, budget_s=0)
    with pytest.raises(KeyError, match="'z', no candidate"):
        run(settle=[("b", "z")], more_rounds=1)
    with pytest.raises(TypeError, match="settle must hold"):
        run(settle=[["b", "t"]], more_rounds=1)
    from tricks_helpers.bench import timing

    clock = iter(range(0, 10_000, 100))  # each reading 100 s later: the budget is spent at once
    monkeypatch.setattr(timing.time, "perf_counter", lambda: float(next(clock)))
    spent = scripted_many(monkeypatch, [0.8, 1.2] * 50)(
        settle=[("b", "t")], more_rounds=10, budget_s=50
    )
    assert len(spent.times["t"]) == 6
