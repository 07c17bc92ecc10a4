"""Tests of tricks_helpers.bench.timing, .pairs, .clock: measure, compare (rounds, checks, bounds),
compare_many.

How a comparison is judged and printed is tested in test_verdicts.py.
"""

import time

import pytest
import torch
from test_verdicts import fake  # one builder of comparisons from chosen ratios

from tricks_helpers import bench


def sleeper(seconds):
    return lambda: time.sleep(seconds)


def test_measure_counts_warmup_and_repeats():
    calls = []
    m = bench.measure(lambda: calls.append(1), repeats=5, number=3, warmup=2, device="cpu")
    assert len(calls) == 2 + 5 * 3
    assert len(m.times) == 5 and m.device == "cpu"
    assert m.median >= 0 and m.spread >= 0


def test_measure_times_sleep_roughly():
    m = bench.measure(sleeper(0.01), repeats=3, warmup=0, device="cpu")
    assert 0.009 < m.median < 0.5


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(repeats=0), ValueError, "repeats must be an integer >= 1"),
        (dict(number=0), ValueError, "number must be an integer >= 1"),
        (dict(warmup=-1), ValueError, "warmup must be an integer >= 0"),
        (dict(repeats=2.5), TypeError, "repeats must be an integer"),
        (dict(repeats=True), TypeError, "repeats must be an integer"),
    ],
)
def test_measure_rejects_bad_counts(kwargs, error, match):
    with pytest.raises(error, match=match):
        bench.measure(lambda: None, device="cpu", **kwargs)


def test_measure_rejects_non_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        bench.measure(42, device="cpu")


@pytest.mark.parametrize(
    "base, trick, verdict", [(0.02, 0.002, bench.FASTER), (0.002, 0.02, bench.SLOWER)]
)
def test_compare_detects_a_clear_speed_up_and_slow_down(base, trick, verdict):
    c = bench.compare(
        f"sleep {base} s vs {trick} s",
        sleeper(base),
        sleeper(trick),
        repeats=7,
        warmup=0,
        device="cpu",
        show=False,
    )
    assert c.verdict == verdict and max(c.ratio, 1 / c.ratio) > 3
    assert c.interval[0] <= c.ratio <= c.interval[1]


def test_compare_interleaves_and_alternates_order():
    log = []
    bench.compare(
        "order",
        lambda: log.append("b"),
        lambda: log.append("t"),
        repeats=4,
        warmup=1,
        device="cpu",
        show=False,
    )
    assert log == ["b", "t"] + ["b", "t", "t", "b", "b", "t", "t", "b"]


def test_compare_prints_verdict_first_short_line_and_details(capsys):
    c = bench.compare(
        "sleep 10 ms vs 1 ms",
        sleeper(0.01),
        sleeper(0.001),
        repeats=6,
        number=2,
        warmup=0,
        device="cpu",
    )
    line, details = capsys.readouterr().out.splitlines()
    assert line == c.line() and details == c.details()
    m = bench.VERDICT_LINE_RE.match(line)
    assert m and m["verdict"] == c.verdict and m["label"] == "sleep 10 ms vs 1 ms"
    assert m["device"] == "cpu" and int(m["threads"]) == torch.get_num_threads()
    assert len(line) < 100
    assert details.startswith("  baseline ~") and "6 rounds x 2 calls" in details


def test_compare_check_refuses_different_outputs_before_timing():
    calls = []

    def base():
        calls.append(1)
        return torch.ones(3)

    with pytest.raises(AssertionError, match="do not compute the same thing"):
        bench.compare(
            "wrong trick", base, lambda: torch.zeros(3), check=True, show=False, device="cpu"
        )
    assert len(calls) == 1  # checked once, never timed
    ok = bench.compare(
        "same",
        lambda: torch.ones(3),
        lambda: torch.ones(3) + 1e-9,
        check=True,
        repeats=2,
        warmup=0,
        show=False,
        device="cpu",
    )
    assert ok.checked and "outputs checked equal" in ok.details()
    with pytest.raises(AssertionError, match="custom"):

        def custom(a, b):
            raise AssertionError("custom mismatch")

        bench.compare("custom", lambda: 1, lambda: 2, check=custom, show=False, device="cpu")
    with pytest.raises(TypeError, match="check must be"):
        bench.compare("bad check", lambda: 1, lambda: 1, check="yes", device="cpu")


def test_compare_bounds_remeasure_then_fail_with_all_attempts(capsys):
    calls = {"n": 0}

    def base():
        calls["n"] += 1
        time.sleep(0.002)

    with pytest.raises(AssertionError, match=r"expected speed-up >= 50x, measured .* in 3 attempt"):
        bench.compare(
            "cannot reach",
            base,
            sleeper(0.002),
            repeats=3,
            warmup=0,
            at_least=50,
            attempts=3,
            device="cpu",
        )
    assert calls["n"] == 3 * 3
    assert len(capsys.readouterr().out.splitlines()) == 2  # only the last attempt is printed
    ok = bench.compare(
        "reaches",
        sleeper(0.02),
        sleeper(0.001),
        repeats=3,
        warmup=0,
        at_least=2,
        show=False,
        device="cpu",
    )
    assert "asserted speed-up >= 2x" in ok.details()
    cost = bench.compare(
        "bounded cost",
        sleeper(0.002),
        sleeper(0.004),
        repeats=3,
        warmup=0,
        at_least=0.2,
        at_most=1.0,
        show=False,
        device="cpu",
    )
    assert 0.2 <= cost.ratio <= 1.0


def test_remeasure():
    c = bench.compare(
        "again", sleeper(0.003), sleeper(0.001), repeats=3, warmup=0, show=False, device="cpu"
    )
    again = c.remeasure()
    assert again.label == c.label and len(again.ratios) == 3
    with pytest.raises(ValueError, match="cannot be measured again"):
        fake().remeasure()  # built from numbers: nothing to run again


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(label=""), ValueError, "label must be a non-empty string"),
        (dict(label="a\nb"), ValueError, "one line"),
        (dict(label=3), TypeError, "label must be str"),
        (dict(baseline=1), TypeError, "baseline must be callable"),
        (dict(trick=None), TypeError, "trick must be callable"),
        (dict(repeats=0), ValueError, "repeats"),
        (dict(at_least=float("nan")), ValueError, "at_least must be a finite number"),
        (dict(at_least=0), ValueError, "at_least must be >"),
        (dict(attempts=0), ValueError, "attempts"),
        (dict(device="meta"), ValueError, "unsupported device type"),
    ],
)
def test_compare_rejects_bad_arguments(kwargs, error, match):
    args = dict(label="x", baseline=lambda: None, trick=lambda: None, device="cpu", show=False)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        bench.compare(**args)


def test_compare_many_rounds_random_order_and_one_pair_per_verdict():
    log = []
    cands = {name: (lambda name=name: log.append(name)) for name in "abc"}
    many = bench.compare_many("three", cands, rounds=4, warmup=1, seed=3, device="cpu")
    assert log[:3] == ["a", "b", "c"]  # warm-up in the given order
    rounds = [log[3 + 3 * r : 6 + 3 * r] for r in range(4)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # the order changes between rounds
    assert all(len(t) == 4 for t in many.times.values())
    single = many.compare("a vs b", ("a", "b"), show=False)
    assert len(single.ratios) == 4
    assert single.ratios == tuple(b / t for b, t in zip(many.times["a"], many.times["b"]))
    assert many.measurement("a").median >= 0
    with pytest.raises(KeyError, match="no candidate 'z'"):
        many.compare("bad", ("a", "z"))


@pytest.mark.parametrize(
    "pairs",
    [[("a", "b"), ("a", "c")], [("a", "b")], [], ("a", "b", "c"), ("a", 1), "ab"],
)
def test_compare_many_refuses_to_pool_pairs(pairs):
    """Issue 19: one verdict per (baseline, trick) pair; a list of pairs is refused."""
    many = bench.ManyComparison("x", {n: (1.0, 1.1) for n in "abc"}, "cpu", 2)
    with pytest.raises(TypeError, match="pooling different pairs into one verdict is refused"):
        many.compare("pooled", pairs, show=False)


def test_compare_many_rejects_bad_input():
    with pytest.raises(ValueError, match="at least two"):
        bench.compare_many("one", {"a": lambda: None}, device="cpu")
    with pytest.raises(TypeError, match="must be callable"):
        bench.compare_many("bad", {"a": lambda: None, "b": 3}, device="cpu")
    with pytest.raises(TypeError, match="candidates must be Mapping"):
        bench.compare_many("bad", [lambda: None, lambda: None], device="cpu")


def test_comparison_from_times_pairs_rounds(capsys):
    c = bench.comparison_from_times(
        "epochs", [2.0, 2.2, 2.1, 2.0, 2.3, 2.1], [1.0, 1.1, 1.0, 1.0, 1.1, 1.05], threads=1
    )
    assert c.ratios[0] == 2.0 and c.verdict == bench.FASTER and c.threads == 1
    assert capsys.readouterr().out.startswith("FASTER ")
    with pytest.raises(ValueError, match="equal length"):
        bench.comparison_from_times("x", [1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="must be >"):
        bench.comparison_from_times("x", [1.0], [0.0])


def test_device_class():
    assert bench.device_class("cpu") == "cpu"
    assert bench.device_class(torch.device("cuda", 0)) == "cuda"
    with pytest.raises(ValueError, match="unsupported device type"):
        bench.device_class("meta")
    with pytest.raises(TypeError, match="device is required"):
        bench.device_class(None)
    with pytest.raises(TypeError, match="device must be a str or torch.device, got int"):
        bench.device_class(0)


def test_timings_require_a_device():
    with pytest.raises(TypeError, match="device"):
        bench.measure(lambda: None)
    with pytest.raises(TypeError, match="device"):
        bench.compare("x", lambda: None, lambda: None, show=False)
    with pytest.raises(TypeError, match="device"):
        bench.compare_many("x", {"a": lambda: None, "b": lambda: None})


def test_cpu_work_is_labelled_cpu_on_a_machine_with_cuda(monkeypatch):
    """Issue 20, defect 1: CUDA being available must not relabel (or synchronise) CPU work."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)

    def no_sync() -> None:
        raise AssertionError("CPU-only work must not synchronise the GPU")

    monkeypatch.setattr(torch.cuda, "synchronize", no_sync)
    x = torch.ones(8)
    m = bench.measure(lambda: x + 1, repeats=2, warmup=0, device=x.device)
    c = bench.compare(
        "cpu add", lambda: x + 1, lambda: x * 2, repeats=2, device=x.device, show=False
    )
    many = bench.compare_many(
        "cpu", {"a": lambda: x + 1, "b": lambda: x * 2}, rounds=2, device="cpu"
    )
    assert m.device == c.device == many.device == "cpu"
    assert "(cpu, " in c.line()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compare_on_cuda_synchronizes():
    x = torch.randn(512, 512, device="cuda")
    c = bench.compare(
        "cuda matmul", lambda: x @ x, lambda: x @ x, repeats=3, device="cuda", show=False
    )
    assert c.device == "cuda" and c.baseline.median > 0


@pytest.mark.parametrize(
    "check",
    [torch.equal, torch.allclose, lambda a, b: torch.tensor(False), lambda a, b: False],
    ids=["torch.equal", "torch.allclose", "0-dim False tensor", "False"],
)
def test_compare_check_callable_returning_false_fails(check):
    with pytest.raises(AssertionError, match="do not compute the same thing.*returned False"):
        bench.compare(
            "differ", lambda: torch.ones(3), lambda: torch.zeros(3), check=check, device="cpu"
        )


def test_compare_check_callable_returning_true_or_none_passes():
    for check in (torch.equal, torch.allclose, lambda a, b: None, lambda a, b: torch.tensor(True)):
        c = bench.compare(
            "same",
            lambda: torch.ones(3),
            lambda: torch.ones(3),
            check=check,
            repeats=1,
            show=False,
            device="cpu",
        )
        assert c.checked


def test_compare_check_callable_returning_a_non_bool_is_a_type_error():
    with pytest.raises(TypeError, match="check returned a \\(3,\\) torch.bool tensor"):
        bench.compare(
            "eq", lambda: torch.ones(3), lambda: torch.ones(3), check=torch.eq, device="cpu"
        )
    with pytest.raises(TypeError, match="check returned float"):
        bench.compare("diff", lambda: 1.0, lambda: 1.0, check=lambda a, b: abs(a - b), device="cpu")


@pytest.mark.parametrize(
    "call",
    [
        lambda: bench.compare("frozen", lambda: 1, lambda: 2, repeats=3, show=False, device="cpu"),
        lambda: bench.measure(lambda: 1, repeats=2, device="cpu"),
        lambda: bench.compare_many(
            "frozen", {"a": lambda: 1, "b": lambda: 2}, rounds=2, device="cpu"
        ),
    ],
    ids=["compare", "measure", "compare_many"],
)
def test_frozen_clock_is_refused_not_an_infinite_speed_up(monkeypatch, capsys, call):
    monkeypatch.setattr(time, "perf_counter", lambda: 42.0)
    with pytest.raises(RuntimeError, match="the clock did not advance"):
        call()
    assert "inf" not in capsys.readouterr().out


def test_the_thread_count_is_the_callers_not_what_a_candidate_left(one_thread):
    """A candidate that changes torch's threads does not relabel the comparison."""
    before = torch.get_num_threads()

    def sets(n):
        def run():
            torch.set_num_threads(n)

        return run

    try:
        pair = bench.compare("threads", sets(3), sets(4), repeats=2, device="cpu", check=False)
        torch.set_num_threads(before)
        many = bench.compare_many("threads", {"3": sets(3), "4": sets(4)}, rounds=2, device="cpu")
    finally:
        torch.set_num_threads(before)
    assert before == 1 and pair.threads == 1 and many.threads == 1  # not 3 or 4


def scripted(monkeypatch, ratios):
    """A compare() whose round i measures baseline 1 ms and trick 1 ms / ratios[i]."""
    from tricks_helpers.bench import pairs

    seq = iter(ratios)

    def baseline():
        return None

    def trick():
        return None

    def fake_time_once(where, fn, number, dev):
        return 1e-3 if fn is baseline else 1e-3 / next(seq)

    monkeypatch.setattr(pairs, "time_once", fake_time_once)

    def run(**kw):
        return bench.compare(
            "x", baseline, trick, repeats=6, warmup=0, device="cpu", show=False, **kw
        )

    return run


UNDECIDED_SIX = [0.85, 1.0, 1.02, 0.98, 1.0, 1.01]


def test_an_undecided_pair_takes_more_rounds_until_decided(monkeypatch, sanitize):
    fixed = scripted(monkeypatch, UNDECIDED_SIX)()
    assert fixed.verdict == bench.UNDECIDED and fixed.rounds == 6 and not fixed.adaptive
    assert "; 6 rounds, 96% interval" in fixed.details()
    more = scripted(monkeypatch, UNDECIDED_SIX + [1.0] * 20)(more_rounds=20)
    assert more.verdict == bench.SAME and 6 < more.rounds < 26 and more.adaptive
    assert f"~{more.rounds} rounds, ~" in more.details()
    # the round count is a measurement now: it sanitizes alike whatever it was
    assert sanitize(more.details()) == sanitize(
        more.details().replace(f"~{more.rounds} rounds", "~7 rounds")
    )
    decided = scripted(monkeypatch, [1.0] * 6)(more_rounds=20)
    assert decided.rounds == 6 and decided.adaptive  # decided at once: no round added
    assert sanitize(decided.details()) == sanitize(more.details())


def test_more_rounds_stop_at_the_budget_and_stay_undecided(monkeypatch):
    c = scripted(monkeypatch, [0.8, 1.2] * 50)(more_rounds=10)
    assert c.verdict == bench.UNDECIDED and c.rounds == 16  # all ten added, still undecided
    run = scripted(monkeypatch, [0.8, 1.2] * 50)
    with pytest.raises(ValueError, match="more_rounds"):
        run(more_rounds=-1)
    with pytest.raises(ValueError, match="budget_s"):
        run(more_rounds=1, budget_s=0)
    from tricks_helpers.bench import pairs

    clock = iter(range(0, 10_000, 100))  # each reading 100 s later: the budget is spent at once
    monkeypatch.setattr(pairs.time, "perf_counter", lambda: float(next(clock)))
    spent = scripted(monkeypatch, [0.8, 1.2] * 50)(more_rounds=10, budget_s=50)
    assert spent.rounds == 6 and spent.verdict == bench.UNDECIDED
