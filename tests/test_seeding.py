"""Tests of tricks_helpers.seeding (chapter 01)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset

from tricks_helpers.seeding import (DuplicateReport, derive_seed, find_duplicate_samples,
                                    fingerprint, reseed_rng_objects, seed_everything,
                                    seed_worker)


# ----------------------------------------------------------------------------- datasets


class Jitter:
    """A transform holding its own RNG, like many augmentation libraries."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, x):
        return x + self.rng.normal(size=x.shape).astype(np.float32)


class CopiedRNGs(Dataset):
    """Every kind of RNG object made in __init__: the bug that survives torch 1.9."""

    def __init__(self, kind: str, n: int = 12):
        self.kind, self.n = kind, n
        self.gen = np.random.default_rng(0)
        self.legacy = np.random.RandomState(0)
        self.pyrng = random.Random(0)
        self.tgen = torch.Generator().manual_seed(0)
        self.transforms = [Jitter(1)]

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


def historic_init(worker_id: int) -> None:
    """Before torch 1.9 every forked worker inherited the parent's numpy state."""
    np.random.seed(1234)


# ----------------------------------------------------------------------------- seed_everything


def test_seed_everything_seeds_python_numpy_torch():
    seed_everything(7)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(7)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first
    seed_everything(8)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) != first


def test_seed_everything_accepts_numpy_int_and_bounds():
    assert seed_everything(np.uint32(5)) == 5
    assert seed_everything(0) == 0
    assert seed_everything(2**32 - 1) == 2**32 - 1


@pytest.mark.parametrize("bad", [-1, 2**32, 1.0, "3", None, True, np.bool_(False)])
def test_seed_everything_rejects_bad_seed_without_changing_state(bad):
    torch.manual_seed(3)
    np.random.seed(3)
    random.seed(3)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    torch.manual_seed(3)
    np.random.seed(3)
    random.seed(3)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        seed_everything(bad)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


# ----------------------------------------------------------------------------- derive / reseed


def test_derive_seed_is_stable_and_distinct():
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert derive_seed(1, "a") != derive_seed(2, "a")
    assert derive_seed(1, "a") != derive_seed(1, "b")
    assert derive_seed(2**63 + 5, "a") != derive_seed(5, "a")  # high bits count
    assert 0 <= derive_seed(123, "x") < 2**64


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_derive_seed_rejects_bad_base(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        derive_seed(bad, "a")


def test_derive_seed_rejects_bad_tag():
    with pytest.raises(ValueError, match="tag must be a string"):
        derive_seed(1, 3)


def test_reseed_rng_objects_finds_nested_shared_and_cyclic():
    ds = CopiedRNGs("nested")
    ds.more = {"t": (Jitter(), [torch.Generator()])}
    ds.alias = ds.gen  # shared: reseeded once
    ds.me = ds  # cycle
    ds.module = np  # modules are not entered
    paths = reseed_rng_objects(ds, 99)
    assert paths == ["dataset.gen", "dataset.legacy", "dataset.pyrng", "dataset.tgen",
                     "dataset.transforms[0].rng", "dataset.more['t'][0].rng",
                     "dataset.more['t'][1][0]"]


def test_reseed_rng_objects_is_reproducible_and_distinct_per_seed_and_path():
    def draws(seed):
        ds = CopiedRNGs("nested")
        reseed_rng_objects(ds, seed)
        return (ds.gen.random(), ds.legacy.rand(), ds.pyrng.random(),
                torch.rand(1, generator=ds.tgen).item(), ds.transforms[0].rng.random())

    a, b, c = draws(1), draws(1), draws(2)
    assert a == b
    assert all(x != y for x, y in zip(a, c))
    assert a[0] != a[4]  # two numpy Generators on different paths get different streams


def test_reseed_rng_objects_non_mt_randomstate_and_slots():
    class Slotted:
        __slots__ = ("rng",)

        def __init__(self):
            self.rng = np.random.RandomState(np.random.PCG64(0))

    obj = Slotted()
    before = np.random.RandomState(np.random.PCG64(0)).rand()
    assert reseed_rng_objects(obj, 5, root="t") == ["t.rng"]
    assert obj.rng.rand() != before


def test_reseed_rng_objects_rejects_bad_seed_before_changing_anything():
    ds = CopiedRNGs("generator")
    state = ds.gen.bit_generator.state
    with pytest.raises(ValueError, match="non-negative"):
        reseed_rng_objects(ds, -3)
    assert ds.gen.bit_generator.state == state


# ----------------------------------------------------------------------------- seed_worker


def test_seed_worker_outside_a_worker_raises():
    with pytest.raises(RuntimeError, match="inside a DataLoader worker"):
        seed_worker(0)


def _epoch(loader):
    return [b.clone() for b in loader]


def test_seed_worker_reseeds_copied_generators_per_worker_and_epoch_reproducibly():
    def run():
        loader = DataLoader(CopiedRNGs("torch", n=8), batch_size=4, num_workers=2,
                            worker_init_fn=seed_worker,
                            generator=torch.Generator().manual_seed(0))
        return [_epoch(loader) for _ in range(2)]

    a, b = run(), run()
    for e in range(2):
        # the two workers' batches hold items 0-3 and 4-7: remove the item offset
        w0, w1 = a[e][0] - torch.arange(4)[:, None], a[e][1] - torch.arange(4, 8)[:, None]
        assert not torch.allclose(w0, w1, atol=1e-4)
    assert not torch.equal(a[0][0], a[1][0])  # fresh every epoch
    assert all(torch.equal(x, y) for ea, eb in zip(a, b) for x, y in zip(ea, eb))  # reproducible


def test_without_seed_worker_copied_generator_repeats():
    loader = DataLoader(CopiedRNGs("torch", n=8), batch_size=4, num_workers=2)
    e1, e2 = _epoch(loader), _epoch(loader)
    assert torch.allclose(e1[0] - torch.arange(4)[:, None], e1[1] - torch.arange(4, 8)[:, None],
                          atol=1e-5)
    assert torch.equal(e1[0], e2[0])


def test_seed_worker_rejects_wrong_worker_id():
    def init(worker_id):
        seed_worker(worker_id + 1)

    loader = DataLoader(CopiedRNGs("none", n=2), batch_size=1, num_workers=1, worker_init_fn=init)
    with pytest.raises(ValueError, match="not this worker's id"):
        next(iter(loader))


# ----------------------------------------------------------------------------- fingerprint


def test_fingerprint_is_bitwise():
    assert fingerprint(np.zeros(3)) == fingerprint(np.zeros(3))
    assert fingerprint(np.zeros(3)) != fingerprint(np.zeros(3, dtype=np.float32))
    assert fingerprint(np.zeros(3)) != fingerprint(np.zeros((3, 1)))
    assert fingerprint(torch.tensor([0.0])) != fingerprint(torch.tensor([-0.0]))
    assert fingerprint(torch.zeros(2)) != fingerprint(np.zeros(2, dtype=np.float32))
    assert fingerprint({"a": (1, 2.0)}) != fingerprint({"a": (1, 2.5)})
    assert fingerprint([1, "x", None, torch.ones(2, dtype=torch.bfloat16)]) == \
        fingerprint([1, "x", None, torch.ones(2, dtype=torch.bfloat16)])
    assert fingerprint(1) != fingerprint(1.0) != fingerprint(True)


# ----------------------------------------------------------------------------- audit


@pytest.mark.parametrize("kind", ["generator", "randomstate", "random", "torch", "nested"])
def test_audit_finds_copied_rngs_and_seed_worker_fixes_them(kind):
    bad = find_duplicate_samples(CopiedRNGs(kind), items=4)
    assert (bad.across_workers, bad.across_epochs) == (8, 8)
    assert (bad.across_workers_checked, bad.across_epochs_checked) == (8, 8)
    assert not bad.clean and "DUPLICATES" in str(bad)
    good = find_duplicate_samples(CopiedRNGs(kind), items=4, worker_init_fn=seed_worker)
    assert (good.across_workers, good.across_epochs) == (0, 0)
    assert good.clean and "-> clean" in str(good)


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


@pytest.mark.parametrize("kwargs, match", [
    ({"num_workers": 1}, "num_workers must be an integer >= 2"),
    ({"num_workers": 0}, "num_workers must be an integer >= 2"),
    ({"epochs": 1}, "epochs must be an integer >= 2"),
    ({"epochs": 2.0}, "epochs must be an integer >= 2"),
    ({"items": 0}, "items must be an integer >= 1"),
    ({"repeats": 1}, "repeats must be an integer >= 2"),
    ({"worker_init_fn": 3}, "worker_init_fn must be callable"),
    ({"persistent_workers": 1}, "persistent_workers must be a bool"),
    ({"generator": 0}, "generator must be a torch.Generator"),
])
def test_audit_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        find_duplicate_samples(CopiedRNGs("none"), **kwargs)


def test_audit_rejects_empty_iterable_and_lenless_datasets():
    with pytest.raises(ValueError, match="empty"):
        find_duplicate_samples(Empty())
    with pytest.raises(TypeError, match="iterable-style"):
        find_duplicate_samples(Stream())
    with pytest.raises(TypeError, match="__len__"):
        find_duplicate_samples(NoLen())


def test_import_changes_no_global_state():
    code = ("import random, numpy as np, torch\n"
            "def state(): return (random.getstate(), np.random.get_state()[1].tolist(), "
            "torch.get_rng_state().tolist())\n"
            "before = state()\n"
            "import tricks_helpers.seeding\n"
            "assert state() == before\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


class CoinFlip(Dataset):
    """A low-entropy augmentation: a horizontal flip with probability 1/2."""

    def __init__(self):
        self.rng = random.Random(0)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = torch.arange(3.0) + 10 * i
        return x.flip(0) if self.rng.random() < 0.5 else x


def test_audit_low_entropy_augmentation_with_enough_repeats():
    assert find_duplicate_samples(CoinFlip(), repeats=16).across_workers == 8
    assert find_duplicate_samples(CoinFlip(), repeats=16, worker_init_fn=seed_worker).clean


def test_seed_worker_reaches_wrapped_datasets_and_persistent_workers():
    wrapped = torch.utils.data.Subset(CopiedRNGs("generator"), list(range(6)))
    assert find_duplicate_samples(wrapped, items=3).across_workers == 6
    assert find_duplicate_samples(wrapped, items=3, worker_init_fn=seed_worker).clean
    assert find_duplicate_samples(CopiedRNGs("torch"), items=3, worker_init_fn=seed_worker,
                                  persistent_workers=True).clean


def test_audit_is_reproducible_with_a_seeded_generator():
    def run():
        ds = CopiedRNGs("generator", n=4)
        loader = DataLoader(ds, batch_size=2, num_workers=2, worker_init_fn=seed_worker,
                            generator=torch.Generator().manual_seed(5))
        return [torch.cat(list(loader)) for _ in range(2)]

    a, b = run(), run()
    assert all(torch.equal(x, y) for x, y in zip(a, b))
