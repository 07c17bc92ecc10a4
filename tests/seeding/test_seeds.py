"""Tests of tricks_helpers.seeding.seeds (chapter 01): seeds, reseeding, seed_worker.

The walk itself is tested in test_rng_walk.py, the audit (find_duplicate_samples) in test_audit.py.
"""

from __future__ import annotations

import collections
import functools
import random
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from tricks_helpers.seeding import (
    RNGWalk,
    derive_seed,
    find_rng_objects,
    reseed_rng_objects,
    seed_everything,
    seed_worker,
    worker_seeding,
)


class Jitter:
    """A transform holding its own RNG, like many augmentation libraries."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, x):
        return x + self.rng.normal(size=x.shape).astype(np.float32)


class Holder:
    def __init__(self):
        self.gen = np.random.default_rng(0)
        self.legacy = np.random.RandomState(0)
        self.pyrng = random.Random(0)
        self.tgen = torch.Generator().manual_seed(0)
        self.transforms = [Jitter(1)]


def _draw(rng):
    if isinstance(rng, torch.Generator):
        return torch.rand(1, generator=rng).item()
    if isinstance(rng, np.random.BitGenerator):
        return float(np.random.Generator(rng).random())
    return float(rng.random())


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
    assert type(seed_everything(np.int64(5))) is int
    assert seed_everything(0) == 0
    assert seed_everything(2**32 - 1) == 2**32 - 1


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (-1, ValueError, r"seed must be an integer in \[0, 4294967295\], got -1"),
        (2**32, ValueError, r"seed must be an integer in \[0, 4294967295\], got 4294967296"),
        (1.5, TypeError, "seed must be an integer, got float 1.5"),
        (1.0, TypeError, "seed must be an integer, got float"),
        ("3", TypeError, "seed must be an integer, got str"),
        (None, TypeError, "seed must be an integer, got NoneType"),
        (True, TypeError, "seed must be an integer, got bool"),
        (np.bool_(False), TypeError, "seed must be an integer, got bool"),
    ],
)
def test_seed_everything_rejects_bad_seed_without_changing_state(bad, error, match):
    # package policy (tricks_helpers._checks): wrong type -> TypeError, wrong value -> ValueError
    seed_everything(3)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(3)
    with pytest.raises(error, match=f"^seed_everything: {match}"):
        seed_everything(bad)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


# ----------------------------------------------------------------------------- derive_seed


def test_derive_seed_is_stable_and_distinct():
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert derive_seed(1, "a") != derive_seed(2, "a")
    assert derive_seed(1, "a") != derive_seed(1, "b")
    assert derive_seed(2**63 + 5, "a") != derive_seed(5, "a")  # high bits count
    assert 0 <= derive_seed(123, "x") < 2**64
    assert derive_seed(np.uint64(7), "a") == derive_seed(7, "a")


@pytest.mark.parametrize(
    "base, tag, error, match",
    [
        (-1, "a", ValueError, "base_seed must be an integer >= 0, got -1"),
        (1.5, "a", TypeError, "base_seed must be an integer, got float"),
        (True, "a", TypeError, "base_seed must be an integer, got bool"),
        (1, 3, TypeError, "tag must be str, got int"),
    ],
)
def test_derive_seed_rejects_bad_arguments(base, tag, error, match):
    with pytest.raises(error, match=f"^derive_seed: {match}"):
        derive_seed(base, tag)


# ----------------------------------------------------------------------------- the walk


def test_reseed_rng_objects_finds_nested_shared_and_cyclic():
    ds = Holder()
    ds.more = {"t": (Jitter(), [torch.Generator()])}
    ds.alias = ds.gen  # shared: reseeded once
    ds.me = ds  # cycle
    ds.module = np  # modules are not entered
    paths = reseed_rng_objects(ds, 99)
    assert paths == [
        "dataset.gen",
        "dataset.legacy",
        "dataset.pyrng",
        "dataset.tgen",
        "dataset.transforms[0].rng",
        "dataset.more['t'][0].rng",
        "dataset.more['t'][1][0]",
    ]


def test_reseed_rng_objects_is_reproducible_and_distinct_per_seed_and_path():
    def draws(seed):
        ds = Holder()
        reseed_rng_objects(ds, seed)
        return (
            ds.gen.random(),
            ds.legacy.rand(),
            ds.pyrng.random(),
            torch.rand(1, generator=ds.tgen).item(),
            ds.transforms[0].rng.random(),
        )

    a, b, c = draws(1), draws(1), draws(2)
    assert a == b
    assert all(x != y for x, y in zip(a, c))
    assert a[0] != a[4]  # two numpy Generators on different paths get different streams


def test_reseed_rng_objects_non_mt_randomstate_and_slots():
    class Slotted:
        __slots__ = ("rng", "unset")

        def __init__(self):
            self.rng = np.random.RandomState(np.random.PCG64(0))

    obj = Slotted()
    before = np.random.RandomState(np.random.PCG64(0)).rand()
    assert reseed_rng_objects(obj, 5, root="t") == ["t.rng"]
    assert obj.rng.rand() != before


def test_walk_reaches_private_slots_and_odd_attribute_names():
    class Private:
        __slots__ = ("__rng",)

        def __init__(self):
            self.__rng = random.Random(0)

    holder = Holder()
    holder.__dict__[1] = np.random.default_rng(0)  # a non-string attribute name
    assert find_rng_objects(Private(), root="p").paths == ("p.__rng",)
    assert find_rng_objects(holder).paths[-1] == "dataset.1"


def _containers():
    """Every container kind issue 12 found seed_worker missing, each holding one RNG."""

    def augment(x, rng=None):
        return x

    def make_closure(rng):
        return lambda x: x + rng.random()

    g = np.random.default_rng(0)
    return {
        "partial keyword": (
            functools.partial(augment, rng=np.random.default_rng(0)),
            "root.keywords['rng']",
        ),
        "partial argument": (functools.partial(augment, 1, random.Random(0)), "root.args[1]"),
        "partial of a transform": (functools.partial(Jitter(0)), "root.func.rng"),
        "deque": (collections.deque([1, torch.Generator().manual_seed(0)]), "root[1]"),
        "set": ({"plain", Jitter(0)}, "root{0}.rng"),
        "frozenset": (frozenset({Jitter(0)}), "root{0}.rng"),
        "numpy object array": (
            np.array([[None, 1], [Jitter(0), "x"]], dtype=object),
            "root[1, 0].rng",
        ),
        "bound method": (Jitter(0).__call__, "root.__self__.rng"),
        "bound method of an RNG": (g.normal, "root.__self__"),
        "closure": (make_closure(random.Random(0)), "root.<closure rng>"),
        # an RNG made once in a default argument is exactly the case under test
        "default argument": (
            (lambda x, rng=np.random.RandomState(0): x),  # noqa: B008
            "root.__defaults__[0]",
        ),
        "dict value": ({"k": [np.random.PCG64(0)]}, "root['k'][0]"),
    }


@pytest.mark.parametrize("name", list(_containers()))
def test_walk_reaches_rngs_in_every_known_container(name):
    obj, path = _containers()[name]
    walk = find_rng_objects(obj, root="root")
    assert walk.paths == (path,)
    # and reseeding changes the stream the object draws
    before = find_rng_objects(_containers()[name][0], root="root")
    assert before.paths == (path,)
    assert reseed_rng_objects(obj, 1, root="root") == [path]


def test_walk_does_not_enter_modules_classes_or_dict_keys():
    class WithClassRNG:
        shared = np.random.default_rng(0)  # a class attribute: documented as not reached

    key_rng = random.Random(0)
    obj = {"cls": WithClassRNG, "instance": WithClassRNG(), "module": np, key_rng: 1}
    assert find_rng_objects(obj).paths == ()


def test_system_random_is_not_reseeded_and_a_shared_bit_generator_once():
    bg = np.random.PCG64(0)
    obj = {"sys": random.SystemRandom(), "g": np.random.Generator(bg), "bg": bg}
    assert find_rng_objects(obj).paths == ("dataset['g']",)


def test_set_order_follows_rng_state_not_insertion_order():
    def run(order):
        rngs = [random.Random(s) for s in order]
        reseed_rng_objects(set(rngs), 11)
        return {s: r.random() for s, r in zip(order, rngs)}

    assert run([1, 2, 3]) == run([3, 1, 2])


def test_walk_counts_and_is_cheap_on_100k_plain_samples():
    # issue 12: the old walk took ~4.4 s per 100k (path, label) tuples, in every worker and epoch
    class Files:
        def __init__(self, n):
            self.samples = [(f"/data/img_{i}.jpg", i % 10) for i in range(n)]
            self.index = {f"img_{i}": i for i in range(n)}
            self.labels = np.arange(n)
            self.aug = Jitter(0)

    ds = Files(100_000)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        walk = find_rng_objects(ds)
        best = min(best, time.perf_counter() - start)
    assert walk == RNGWalk(paths=("dataset.aug.rng",), entered=4, skipped=200_001)
    assert best < 1.0, f"walking 100k plain samples took {best:.2f} s"  # typically ~30 ms


def test_walk_rejects_bad_arguments_before_changing_anything():
    ds = Holder()
    state = ds.gen.bit_generator.state
    with pytest.raises(ValueError, match="^reseed_rng_objects: base_seed must be an integer >= 0"):
        reseed_rng_objects(ds, -3)
    with pytest.raises(TypeError, match="^reseed_rng_objects: base_seed must be an integer"):
        reseed_rng_objects(ds, "3")
    with pytest.raises(TypeError, match="root must be str"):
        reseed_rng_objects(ds, 3, root=1)
    assert ds.gen.bit_generator.state == state


# ----------------------------------------------------------------------------- seed_worker


def test_seed_worker_outside_a_worker_raises():
    assert worker_seeding() is None
    with pytest.raises(RuntimeError, match="inside a DataLoader worker"):
        seed_worker(0)
    with pytest.raises(TypeError, match="^seed_worker: worker_id must be an integer"):
        seed_worker("0")


class TorchRNG(Dataset):
    def __init__(self, n=8):
        self.n = n
        self.tgen = torch.Generator().manual_seed(0)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.rand(3, generator=self.tgen) + i


def _epoch(loader):
    return [b.clone() for b in loader]


def test_seed_worker_reseeds_copied_generators_per_worker_and_epoch_reproducibly():
    def run():
        loader = DataLoader(
            TorchRNG(),
            batch_size=4,
            num_workers=2,
            worker_init_fn=seed_worker,
            generator=torch.Generator().manual_seed(0),
        )
        return [_epoch(loader) for _ in range(2)]

    a, b = run(), run()
    for e in range(2):
        # the two workers' batches hold items 0-3 and 4-7: remove the item offset
        w0, w1 = a[e][0] - torch.arange(4)[:, None], a[e][1] - torch.arange(4, 8)[:, None]
        assert not torch.allclose(w0, w1, atol=1e-4)
    assert not torch.equal(a[0][0], a[1][0])  # fresh every epoch
    assert all(torch.equal(x, y) for ea, eb in zip(a, b) for x, y in zip(ea, eb))  # reproducible


def test_without_seed_worker_copied_generator_repeats():
    loader = DataLoader(TorchRNG(), batch_size=4, num_workers=2)
    e1, e2 = _epoch(loader), _epoch(loader)
    assert torch.allclose(
        e1[0] - torch.arange(4)[:, None], e1[1] - torch.arange(4, 8)[:, None], atol=1e-5
    )
    assert torch.equal(e1[0], e2[0])


class Record(Dataset):
    """Returns what seed_worker recorded in the worker."""

    def __init__(self):
        self.aug = functools.partial(Jitter.__call__, Jitter(0))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        record = worker_seeding()
        return record.worker_id, record.seed, record.reseeded


def test_seed_worker_records_what_it_did_in_the_worker():
    loader = DataLoader(
        Record(),
        batch_size=1,
        num_workers=2,
        worker_init_fn=seed_worker,
        collate_fn=lambda batch: batch[0],
    )
    got = sorted(loader)
    assert [w for w, _, _ in got] == [0, 1]
    assert got[0][1] + 1 == got[1][1]  # worker seeds: base_seed + worker_id
    assert {paths for _, _, paths in got} == {("dataset.aug.args[0].rng",)}


def test_seed_worker_rejects_wrong_worker_id():
    def init(worker_id):
        seed_worker(worker_id + 1)

    loader = DataLoader(TorchRNG(2), batch_size=1, num_workers=1, worker_init_fn=init)
    with pytest.raises(ValueError, match="not this worker's id"):
        next(iter(loader))


def test_import_changes_no_global_state():
    code = (
        "import random, numpy as np, torch\n"
        "def state(): return (random.getstate(), np.random.get_state()[1].tolist(), "
        "torch.get_rng_state().tolist())\n"
        "before = state()\n"
        "import tricks_helpers.seeding\n"
        "assert state() == before\n"
        "assert tricks_helpers.seeding.worker_seeding() is None\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
