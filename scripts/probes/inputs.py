"""Probe the modules of issue 32 (parts 3 and 4) with bad inputs: resume, compiling, syncs, limits.

The storage cases are in ``scripts/probes/storage_untrusted.py``; this probe runs each case the
same way (:mod:`scripts.probes.harness`: a forked child with a time limit), and classes it as
``correct``, ``clear error``, ``obscure``, ``silent wrong``, ``crash`` or ``hang``. Here a
documented error also includes ``RuntimeError`` and ``OSError`` with a message naming the
function.

Run: ``python -m scripts.probes.inputs [label filter]`` (one line per case, then the counts; exit
status 1 when any case is silent wrong, a crash or a hang).
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from scripts.probes.harness import ERROR, classify_outcome, equals, probe_command

_DOCUMENTED = (TypeError, ValueError, IndexError, RuntimeError, OSError)
_CONTEXT = (
    "load_checkpoint",
    "save_checkpoint",
    "resume_in_fresh_process",
    "params_max_diff",
    "profiled_host_reads",
    "Limits",
    "machine_facts",
    "ck.pt",
)
classify = partial(classify_outcome, documented=_DOCUMENTED, context=_CONTEXT)


def _ckpt(t: Path, steps: int = 2, edit: Callable[[dict], dict] | None = None) -> Path:
    from tricks_helpers import resume
    from tricks_helpers.resume import checkpoint  # save_checkpoint's home: the name it calls

    run = resume.new_run(0)
    if steps:
        resume.train(run, steps)
    real = checkpoint.checkpoint_state
    if edit is not None:
        checkpoint.checkpoint_state = lambda r: edit(real(r))
    try:
        return resume.save_checkpoint(run, t / "ck.pt")
    finally:
        checkpoint.checkpoint_state = real


def _flip(t: Path, bit: int) -> Any:
    from tricks_helpers import resume

    p = _ckpt(t)
    data = bytearray(p.read_bytes())
    at = bit % (len(data) * 8)
    data[at // 8] ^= 1 << (at % 8)
    p.write_bytes(bytes(data))
    return resume.final_state(resume.load_checkpoint(p))


def _rng_kept(path: Path) -> Any:
    """Load checkpoint ``path``; when that raises, check the global RNGs are as they were."""
    import random

    import torch

    from tricks_helpers import resume

    before = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    try:
        return resume.load_checkpoint(path)
    except Exception:
        after = (torch.get_rng_state(), np.random.get_state()[1], random.getstate())
        if not (
            torch.equal(before[0], after[0])
            and np.array_equal(before[1], after[1])
            and before[2] == after[2]
        ):
            return "global RNGs changed by a failed load"
        raise


def _without(name: str) -> Callable[[dict], dict]:
    def edit(state: dict) -> dict:
        del state[name]
        return state

    return edit


def _bad_order(state: dict) -> dict:
    state["sampler"]["order"] = [0] * len(state["sampler"]["order"])
    return state


def _before_first_step(t: Path) -> bool:
    from tricks_helpers import resume

    ref = resume.new_run(0)
    resume.train(ref, 6)
    again = resume.load_checkpoint(_ckpt(t, steps=0))
    resume.train(again, 6)
    return again.losses == ref.losses


def _save_onto_dir(t: Path) -> Any:
    from tricks_helpers import resume

    (t / "d").mkdir()
    try:
        return resume.save_checkpoint(resume.new_run(0), t / "d")
    finally:
        left = sorted(p.name for p in t.iterdir())
        if left != ["d"]:
            raise AssertionError(f"left behind: {left}")  # classed obscure: not documented


def _concurrent(t: Path) -> bool:
    from tricks_helpers import resume

    p = _ckpt(t)
    got: dict = {}
    variants = {"a": [()], "b": [("numpy_rng",)]}

    def one(n: str) -> None:
        got[n] = resume.resume_in_fresh_process(p, 1, variants[n])

    threads = [threading.Thread(target=one, args=(n,)) for n in variants]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return set(got.get("a", ())) == {"complete"} and set(got.get("b", ())) == {"without numpy_rng"}


def _models(edit_b: Callable[[Any], None]) -> tuple[Any, Any]:
    import torch
    from torch import nn

    a = nn.Linear(3, 2)
    b = nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        edit_b(b)
    return a, b


#: A valid ``tricks_helpers.limits.Limits`` (a 2-core machine): each ``Limits`` case of the probe
#: changes one field of it; the unit tests build theirs from it (``make_limits`` in
#: tests/conftest.py).
GOOD_LIMITS: dict[str, Any] = {
    "threads": 2,
    "cache_bytes": 2**23,
    "cache_source": "sysfs L3",
    "buffer_bytes": 2**25,
    "bandwidth": 10e9,
    "matmul": {"float32": 100e9},
    "matmul_size": {"float32": 512},
}


def _limits(**change: Any) -> Any:
    from tricks_helpers import limits

    lim = limits.Limits(**{**GOOD_LIMITS, **change})
    return lim.percent_of_bandwidth(1e9, 1.0), lim.percent_of_matmul("float32", 1e9, 1.0)


def _cache(t: Path, size: str) -> Any:
    from tricks_helpers import limits

    d = t / "index3"
    d.mkdir()
    (d / "level").write_text("3\n")
    (d / "type").write_text("Unified\n")
    (d / "size").write_text(f"{size}\n")
    return limits.last_level_cache(t)


def _cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    import torch

    from scripts.book import machine_records
    from tricks_helpers import compiling, resume, syncs

    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    # ---- resume (part 3)
    for bit in np.random.default_rng(32).integers(0, 2**40, 40):
        c.append(
            (f"load_checkpoint bit {int(bit) % 10**6} flipped", partial(_flip, bit=int(bit)), ERROR)
        )
    for name in ("python_rng", "torch_rng", "sampler", "model"):
        c.append(
            (
                f"load_checkpoint without {name}",
                lambda t, n=name: _rng_kept(_ckpt(t, edit=_without(n))),
                ERROR,
            )
        )
    c.append(
        (
            "load_checkpoint sampler order not a permutation",
            lambda t: _rng_kept(_ckpt(t, edit=_bad_order)),
            ERROR,
        )
    )
    c.append(("load_checkpoint missing file", lambda t: resume.load_checkpoint(t / "no.pt"), ERROR))
    c.append(("load_checkpoint a directory", lambda t: resume.load_checkpoint(t), ERROR))
    c.append(
        (
            "load_checkpoint empty file",
            lambda t: (t / "ck.pt").write_bytes(b"") or resume.load_checkpoint(t / "ck.pt"),
            ERROR,
        )
    )
    c.append(
        (
            "load_checkpoint a plain torch.save file",
            lambda t: torch.save({"model": {}}, t / "ck.pt") or resume.load_checkpoint(t / "ck.pt"),
            ERROR,
        )
    )
    c.append(("load_checkpoint path=None", lambda t: resume.load_checkpoint(None), ERROR))
    c.append(("save_checkpoint onto a directory", _save_onto_dir, ERROR))
    c.append(
        (
            "save_checkpoint folder missing",
            lambda t: resume.save_checkpoint(resume.new_run(0), t / "no" / "ck.pt"),
            ERROR,
        )
    )
    c.append(
        ("save_checkpoint run=None", lambda t: resume.save_checkpoint(None, t / "ck.pt"), ERROR)
    )
    c.append(("checkpoint before the first step resumes bitwise", _before_first_step, equals(True)))
    c.append(("two resume_in_fresh_process at once", _concurrent, equals(True)))
    # ---- compiling.params_max_diff
    nan = float("nan")
    for label, edit, expect in [
        ("NaN weight", lambda b: b.weight.__setitem__((0, 0), nan), math.isnan),
        (
            "NaN beside 0.5",
            lambda b: (b.weight.__setitem__((0, 0), nan), b.bias.add_(0.5)),
            math.isnan,
        ),
        ("inf weight", lambda b: b.weight.__setitem__((0, 0), math.inf), lambda g: g == math.inf),
        ("0.25 apart", lambda b: b.bias.add_(0.25), lambda g: abs(g - 0.25) < 1e-7),
        ("equal", lambda b: None, lambda g: g == 0.0),
    ]:
        c.append(
            (
                f"params_max_diff {label}",
                lambda t, e=edit: compiling.params_max_diff(*_models(e)),
                expect,
            )
        )
    c.append(
        (
            "params_max_diff NaN in both",
            lambda t: compiling.params_max_diff(
                *(2 * [_models(lambda b: b.weight.__setitem__((0, 0), nan))[1]])
            ),
            math.isnan,
        )
    )
    # ---- syncs
    x = torch.tensor([0.5, -1.0, 2.0, -3.0])
    m = x > 0
    for label, fn in [
        ("x[mask]", lambda: x[m]),
        ("x[mask] = 0", lambda: x.clone().__setitem__(m, 0.0)),
        ("nonzero", lambda: x.nonzero()),
        ("unique", lambda: x.unique()),
        ("masked_select", lambda: x.masked_select(m)),
        ("bincount", lambda: m.long().bincount()),
        ("repeat_interleave", lambda: x.repeat_interleave(m.long())),
        ("torch.where(mask)", lambda: torch.where(m)),
    ]:
        c.append((f"host_reads {label}", lambda t, f=fn: syncs.host_reads(f), equals(1)))
    c.append(
        (
            "host_reads x[int index]",
            lambda t: syncs.host_reads(lambda: x[torch.tensor([1])]),
            equals(0),
        )
    )

    def nested(t: Path) -> Any:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]):
            return syncs.profiled_host_reads(lambda: x.sum().item())

    c.append(("profiled_host_reads inside a profiler", nested, ERROR))
    c.append(("profiled_host_reads fn=None", lambda t: syncs.profiled_host_reads(None), ERROR))
    # ---- limits and machine_facts
    for label, change in [
        ("bandwidth 0", {"bandwidth": 0.0}),
        ("bandwidth nan", {"bandwidth": nan}),
        ("bandwidth -1", {"bandwidth": -1.0}),
        ("matmul 0", {"matmul": {"float32": 0.0}}),
        ("cache 0 bytes", {"cache_bytes": 0}),
        ("threads 0", {"threads": 0}),
        ("threads '2'", {"threads": "2"}),
    ]:
        c.append((f"Limits {label}", lambda t, ch=change: _limits(**ch), ERROR))
    c.append(("Limits good", lambda t: _limits(), lambda g: g == (10.0, 1.0)))
    for size in ("0K", "0"):
        c.append(
            (
                f"last_level_cache L3 of {size}",
                lambda t, s=size: _cache(t, s),
                lambda g: g[0] > 0,
            )
        )
    for threads in (0, -1, 2.5, "2"):
        c.append(
            (
                f"machine_facts threads={threads!r}",
                lambda t, n=threads: machine_records.machine_facts(
                    cpu="x", flags=frozenset(), environ={}, threads=n
                ),
                ERROR,
            )
        )
    return c


#: ``probe(timeout=120.0, only=None)``: the rows; ``main(argv)``: the command (harness).
probe, main = probe_command(_cases, classify, timeout=120.0, width=48)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
