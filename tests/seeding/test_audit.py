"""Tests of tricks_helpers.seeding.audit (chapter 01): the worker-seeding audit."""

from __future__ import annotations

import collections
import functools
import multiprocessing
import random
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset

from tricks_helpers.seeding import DuplicateReport, find_duplicate_samples, fingerprint, seed_worker

# ----------------------------------------------------------------------------- datasets


class Jitter:
    """A transform holding its own RNG, like many augmentation libraries."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, x):
        return x + self.rng.normal(size=x.shape).astype(np.float32)


def _shift(x, rng):
    return x + rng.random()


class CopiedRNGs(Dataset):
    """Every kind of RNG object made in __init__: the bug that survives torch 1.9."""

    def __init__(self, kind: str, n: int = 12):
        self.kind, self.n = kind, n
        self.gen = np.random.default_rng(0)
        self.legacy = np.random.RandomState(0)
        self.pyrng = random.Random(0)
        self.tgen = torch.Generator().manual_seed(0)
        self.transforms = [Jitter(1)]
        # the containers issue 12 found seed_worker missing
        self.partial = functools.partial(_shift, rng=np.random.default_rng(2))
        self.queue = collections.deque([random.Random(3)])
        self.bag = {Jitter(4)}
        self.table = np.array([Jitter(5), None], dtype=object)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = np.full(3, i, dtype=np.float32)
        if self.kind == "generator":
            return x + self.gen.random(3)
        if self.kind == "randomstate":
            return (i, self.legacy.rand(3))
        if self.kind == "random":
            return {"i": i, "u": self.pyrng.random()}
        if self.kind == "torch":
            return torch.rand(3, generator=self.tgen) + i
        if self.kind == "nested":
            return self.transforms[0](x)
        if self.kind == "partial":
            return self.partial(x)
        if self.kind == "deque":
            return x + self.queue[0].random()
        if self.kind == "set":
            return next(iter(self.bag))(x)
        if self.kind == "object array":
            return self.table[0](x)
        if self.kind == "global":
            return x + np.random.rand(3)
        if self.kind == "none":
            return torch.full((3,), float(i))
        raise AssertionError(self.kind)


class Identical(Dataset):
    """All items equal; the augmentation is correctly random per worker (global numpy)."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return np.zeros(2) + np.random.rand(2)


class NoLen(Dataset):
    def __getitem__(self, i):
        return i


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(3))


class Empty(Dataset):
    def __len__(self):
        return 0

    def __getitem__(self, i):
        raise IndexError(i)


class Blocking(Dataset):
    """__getitem__ never returns (a lock never released, a network read that hangs)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        threading.Event().wait()


class CoinFlip(Dataset):
    """A low-entropy augmentation: a horizontal flip with probability 1/2."""

    def __init__(self):
        self.rng = random.Random(0)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = torch.arange(3.0) + 10 * i
        return x.flip(0) if self.rng.random() < 0.5 else x


def historic_init(worker_id: int) -> None:
    """Before torch 1.9 every forked worker inherited the parent's numpy state."""
    np.random.seed(1234)


# ----------------------------------------------------------------------------- fingerprint


def test_fingerprint_is_bitwise():
    assert fingerprint(np.zeros(3)) == fingerprint(np.zeros(3))
    assert fingerprint(np.zeros(3)) != fingerprint(np.zeros(3, dtype=np.float32))
    assert fingerprint(np.zeros(3)) != fingerprint(np.zeros((3, 1)))
    assert fingerprint(torch.tensor([0.0])) != fingerprint(torch.tensor([-0.0]))
    assert fingerprint(torch.zeros(2)) != fingerprint(np.zeros(2, dtype=np.float32))
    assert fingerprint({"a": (1, 2.0)}) != fingerprint({"a": (1, 2.5)})
    assert fingerprint([1, "x", None, torch.ones(2, dtype=torch.bfloat16)]) == fingerprint(
        [1, "x", None, torch.ones(2, dtype=torch.bfloat16)]
    )
    assert fingerprint(1) != fingerprint(1.0) != fingerprint(True)


def _quantized(values, scale=0.1):
    with warnings.catch_warnings():  # quantized tensor creation is deprecated in torch 2.13
        warnings.simplefilter("ignore")
        return torch.quantize_per_tensor(torch.tensor(values), scale, 0, torch.qint8)


def test_fingerprint_handles_quantized_and_views_and_refuses_what_it_cannot_read():
    # a quantized tensor's storage viewed as bytes crashes the process (issue 12)
    q = _quantized([0.1, 0.5])
    assert fingerprint(q) == fingerprint(_quantized([0.1, 0.5]))
    assert fingerprint(q) != fingerprint(_quantized([0.1, 0.6]))
    assert fingerprint(q) != fingerprint(_quantized([0.1, 0.5], scale=0.2))
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert fingerprint(z.conj()) == fingerprint(z.conj().resolve_conj())
    with pytest.raises(TypeError, match="^fingerprint: only dense tensors"):
        fingerprint(torch.empty(2, device="meta"))
    with pytest.raises(TypeError, match="^fingerprint: only dense tensors"):
        fingerprint([torch.zeros(2).to_sparse()])
    with pytest.raises(TypeError, match="^fingerprint: cannot fingerprint a function"):
        fingerprint(lambda: 0)


# ----------------------------------------------------------------------------- audit

KINDS = [
    "generator",
    "randomstate",
    "random",
    "torch",
    "nested",
    "partial",
    "deque",
    "set",
    "object array",
]


@pytest.mark.parametrize("kind", KINDS)
def test_audit_finds_copied_rngs_and_seed_worker_fixes_them(kind):
    # partial/deque/set/object array: issue 12 (seed_worker missed them: 8/8 after the "fix")
    bad = find_duplicate_samples(CopiedRNGs(kind), items=4)
    assert (bad.across_workers, bad.across_epochs) == (8, 8)
    assert (bad.across_workers_checked, bad.across_epochs_checked) == (8, 8)
    assert not bad.clean and "DUPLICATES" in str(bad)
    assert bad.seed_worker_calls == 0 and bad.reseeded == ()
    good = find_duplicate_samples(CopiedRNGs(kind), items=4, worker_init_fn=seed_worker)
    assert (good.across_workers, good.across_epochs) == (0, 0)
    assert good.clean and "-> clean" in str(good)


def test_audit_reports_seed_worker_calls_and_paths():
    report = find_duplicate_samples(
        CopiedRNGs("nested"), items=2, epochs=3, worker_init_fn=seed_worker
    )
    assert report.seed_worker_calls == 2 * 3  # workers x epochs
    assert report.reseeded == (
        "dataset.gen",
        "dataset.legacy",
        "dataset.pyrng",
        "dataset.tgen",
        "dataset.transforms[0].rng",
        "dataset.partial.keywords['rng']",
        "dataset.queue[0]",
        "dataset.bag{0}.rng",
        "dataset.table[0].rng",
    )
    assert str(report).endswith("; seed_worker ran 6 times, reseeding 9 RNG object(s)")
    persistent = find_duplicate_samples(
        CopiedRNGs("nested"), items=2, epochs=3, worker_init_fn=seed_worker, persistent_workers=True
    )
    assert persistent.seed_worker_calls == 2 and persistent.clean  # once per worker


def test_audit_persistent_workers_repeat_across_workers_only():
    report = find_duplicate_samples(CopiedRNGs("generator"), items=4, persistent_workers=True)
    assert (report.across_workers, report.across_epochs) == (8, 0)
    assert "persistent workers" in str(report)


def test_audit_historic_numpy_bug_and_modern_default():
    old = find_duplicate_samples(CopiedRNGs("global"), items=4, worker_init_fn=historic_init)
    assert (old.across_workers, old.across_epochs) == (8, 8)
    now = find_duplicate_samples(CopiedRNGs("global"), items=4)
    assert now.clean


def test_audit_identical_items_with_random_augmentation_are_clean():
    report = find_duplicate_samples(Identical(), num_workers=2, epochs=3)
    assert report.items_without_randomness == 0
    assert report.clean
    assert report.across_workers_checked == 6 * 1 * 3 and report.across_epochs_checked == 6 * 2 * 3


def test_audit_excludes_items_without_randomness():
    report = find_duplicate_samples(CopiedRNGs("none", n=3))
    assert report.items_probed == 3 and report.items_without_randomness == 3
    assert report.across_workers == report.across_epochs == 0
    assert "no randomness found" in str(report)


def test_audit_report_type():
    report = find_duplicate_samples(CopiedRNGs("random", n=3), items=2)
    assert isinstance(report, DuplicateReport)
    assert report.num_workers == 2 and report.epochs == 2 and report.repeats == 4


def _worker_processes():
    return [p for p in multiprocessing.active_children() if p.is_alive()]


@pytest.mark.parametrize("persistent", [False, True])
def test_audit_times_out_on_a_blocking_getitem_and_stops_the_workers(persistent):
    # issue 12: the audit used to wait forever
    before = set(_worker_processes())
    start = time.monotonic()
    with pytest.raises(
        TimeoutError,
        match=r"^find_duplicate_samples: no batch from the workers "
        r"within 1 s in epoch 0; __getitem__",
    ):
        find_duplicate_samples(Blocking(), timeout=1, persistent_workers=persistent)
    assert time.monotonic() - start < 30
    deadline = time.monotonic() + 10
    while set(_worker_processes()) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(_worker_processes()) - before, "the blocked workers are still running"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_workers": 1}, ValueError, "num_workers must be an integer >= 2, got 1"),
        ({"num_workers": 0}, ValueError, "num_workers must be an integer >= 2"),
        ({"num_workers": "2"}, TypeError, "num_workers must be an integer, got str"),
        ({"epochs": 1}, ValueError, "epochs must be an integer >= 2"),
        ({"epochs": 2.0}, TypeError, "epochs must be an integer, got float"),
        ({"items": 0}, ValueError, "items must be an integer >= 1"),
        ({"repeats": 1}, ValueError, "repeats must be an integer >= 2"),
        ({"repeats": True}, TypeError, "repeats must be an integer, got bool"),
        ({"worker_init_fn": 3}, TypeError, "worker_init_fn must be callable"),
        ({"persistent_workers": 1}, TypeError, "persistent_workers must be True or False"),
        ({"generator": 0}, TypeError, "generator must be Generator, got int"),
        ({"timeout": 0}, ValueError, "timeout must be > 0.0, got 0.0"),
        ({"timeout": float("inf")}, ValueError, "timeout must be a finite number"),
        ({"timeout": "5"}, TypeError, "timeout must be a number, got str"),
        ({"timeout": 2**70}, ValueError, "timeout must be <= "),
        ({"multiprocessing_context": "thread"}, ValueError, "multiprocessing_context must be one"),
    ],
)
def test_audit_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=f"^find_duplicate_samples: {match}"):
        find_duplicate_samples(CopiedRNGs("none"), **kwargs)


def test_audit_rejects_empty_iterable_and_lenless_datasets():
    with pytest.raises(ValueError, match="empty"):
        find_duplicate_samples(Empty())
    with pytest.raises(TypeError, match="iterable-style"):
        find_duplicate_samples(Stream())
    with pytest.raises(TypeError, match="__len__"):
        find_duplicate_samples(NoLen())


def test_audit_low_entropy_augmentation_with_enough_repeats():
    assert find_duplicate_samples(CoinFlip(), repeats=16).across_workers == 8
    assert find_duplicate_samples(CoinFlip(), repeats=16, worker_init_fn=seed_worker).clean


def test_seed_worker_reaches_wrapped_datasets_and_persistent_workers():
    wrapped = torch.utils.data.Subset(CopiedRNGs("generator"), list(range(6)))
    assert find_duplicate_samples(wrapped, items=3).across_workers == 6
    assert find_duplicate_samples(wrapped, items=3, worker_init_fn=seed_worker).clean
    assert find_duplicate_samples(
        CopiedRNGs("torch"), items=3, worker_init_fn=seed_worker, persistent_workers=True
    ).clean


def test_audit_is_reproducible_with_a_seeded_generator():
    def run():
        ds = CopiedRNGs("generator", n=4)
        loader = DataLoader(
            ds,
            batch_size=2,
            num_workers=2,
            worker_init_fn=seed_worker,
            generator=torch.Generator().manual_seed(5),
        )
        return [torch.cat(list(loader)) for _ in range(2)]

    a, b = run(), run()
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_audit_passes_the_start_method_to_the_loader(monkeypatch):
    """The chapter names its start method (chapter 01: fork); the audit hands it on."""
    from tricks_helpers.seeding import audit

    seen = {}
    real = audit.DataLoader

    def spy(*args, **kwargs):
        seen["ctx"] = kwargs.get("multiprocessing_context")
        return real(*args, **kwargs)

    monkeypatch.setattr(audit, "DataLoader", spy)
    report = find_duplicate_samples(
        CopiedRNGs("generator"), items=2, multiprocessing_context="fork"
    )
    assert seen["ctx"] == "fork" and report.num_workers == 2
