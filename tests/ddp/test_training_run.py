"""Tests of tricks_helpers.ddp.training_run: configs, the reference, and a 2-rank gloo run."""

from __future__ import annotations

import sys

import pytest
import torch

from tricks_helpers import ddp

TINY = dict(epochs=2, batch_size=8, samples=64, hidden=16, features=8)


# tiny models train on one intra-op thread (the shared fixture in conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_thread")


def test_parse_run_keys_and_types():
    cfg = ddp.parse_run("acc:accum=2,no_sync=0,lr=0.1")
    assert (cfg.name, cfg.accum, cfg.no_sync, cfg.lr) == ("acc", 2, False, 0.1)
    assert ddp.parse_run("plain") == ddp.RunConfig(name="plain")


@pytest.mark.parametrize(
    "spec, match",
    [
        ("x:speed=3", "bad item 'speed=3'"),
        ("x:accum", "bad item 'accum'"),
        ("x:name=y", "bad item 'name=y'"),
        ("x:no_sync=yes", "no_sync='yes' is not a valid bool"),
        ("x:accum=two", "accum='two' is not a valid int"),
        ("bad name", "name must be"),
        ("x:accum=0", "accum must be an integer >= 1"),
        ("x:lr=-1", "lr must be > 0"),
        ("x:lr=nan", "lr must be a finite number"),
        ("x:seed=-1", "seed must be an integer >= 0"),
    ],
)
def test_parse_run_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        ddp.parse_run(spec)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epochs=2.0), "epochs must be an integer"),
        (dict(batch_size=True), "batch_size must be an integer"),
        (dict(no_sync="no"), "no_sync must be True or False"),
        (dict(set_epoch=1), "set_epoch must be True or False"),
        (dict(lr="0.1"), "lr must be a number"),
        (dict(name=3), "name must be str"),
    ],
)
def test_run_config_wrong_types_raise_type_error(kwargs, match):
    with pytest.raises(TypeError, match=match):
        ddp.RunConfig(**kwargs)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ddp.parse_run(3), "spec must be str"),
        (lambda: ddp.parse_run("x", defaults={}), "defaults must be RunConfig"),
        (lambda: ddp.train_reference("x", 2), "cfg must be RunConfig"),
        (
            lambda: ddp.train_reference(ddp.RunConfig(), 2.0),
            "world_size must be an int",
        ),
        (lambda: ddp.RunConfig().steps_per_epoch("2"), "world_size must be an integer"),
        (lambda: ddp.make_dataset(None), "cfg must be RunConfig"),
        (lambda: ddp.params_hash("model"), "model must be Module"),
        (lambda: ddp.IndexedDataset([1, 2], torch.zeros(2)), "X must be Tensor"),
        (lambda: ddp.load_results(3, "ddp", 2), "out_dir must be str or PathLike"),
        (lambda: ddp.load_results(".", "ddp", "2"), "world_size must be an integer"),
    ],
)
def test_wrong_types_raise_type_error(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_steps_per_epoch_checks_accumulation():
    cfg = ddp.RunConfig(samples=64, batch_size=8, accum=2)
    assert cfg.steps_per_epoch(2) == 4
    with pytest.raises(ValueError, match="not a positive multiple of accum=3"):
        ddp.RunConfig(samples=64, batch_size=8, accum=3).steps_per_epoch(2)
    with pytest.raises(ValueError, match="world_size must be an integer >= 1"):
        ddp.train_reference(cfg, 0)
    with pytest.raises(ValueError, match="world_size must be an integer >= 1"):
        cfg.steps_per_epoch(0)


def test_dataset_is_fixed_and_indexed():
    cfg = ddp.RunConfig(**TINY)
    a, b = ddp.make_dataset(cfg), ddp.make_dataset(cfg)
    assert torch.equal(a.X, b.X) and torch.equal(a.y, b.y)
    assert a[5][2] == 5 and len(a) == 64
    with pytest.raises(ValueError, match="4 inputs but 3 labels"):
        ddp.IndexedDataset(torch.zeros(4, 2), torch.zeros(3))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torchrun launch test on Linux")
def test_two_rank_gloo_run_matches_one_process(tmp_path):
    tiny = ",".join(f"{k}={v}" for k, v in TINY.items())
    ddp.run_torchrun(
        "tricks_helpers.ddp",
        [
            "train",
            "--out",
            tmp_path,
            "--backend",
            "gloo",
            "--variant",
            f"ddp:{tiny}",
            "--variant",
            f"acc:{tiny},accum=2,no_sync=1",
            "--variant",
            f"stale:{tiny},set_epoch=0",
        ],
        module=True,
        nproc_per_node=2,
        timeout=180,
    )
    for name, accum, set_epoch in (("ddp", 1, True), ("acc", 2, True), ("stale", 1, False)):
        r0, r1 = ddp.load_results(tmp_path, name, 2)
        assert (r0["rank"], r1["rank"], r0["backend"]) == (0, 1, "gloo")
        assert r0["init_hash"] == r1["init_hash"]  # seeded alike
        assert r0["final_hash"] == r1["final_hash"]  # replicas stay in sync
        assert r0["aug_first"] != r1["aug_first"]  # augmentation seeded apart
        for epoch in range(2):  # disjoint shards, all samples
            assert sorted(r0["epoch_orders"][epoch] + r1["epoch_orders"][epoch]) == list(range(64))
        assert (r0["epoch_orders"][0] == r0["epoch_orders"][1]) == (not set_epoch)
        assert r0["optimizer_steps"] == 2 * 4 // accum
        assert r0["allreduce_calls"] == r0["optimizer_steps"]  # one bucket, no_sync between
        cfg = ddp.parse_run(f"{name}:{tiny},accum={accum},set_epoch={int(set_epoch)}")
        ref, losses = ddp.train_reference(cfg, 2)
        state = torch.load(tmp_path / f"{name}.pt")
        diff = max((state[k] - v).abs().max().item() for k, v in ref.state_dict().items())
        assert diff < 1e-5
        ddp_losses = [(a + b) / 2 for a, b in zip(r0["losses"], r1["losses"])]
        assert max(abs(a - b) for a, b in zip(ddp_losses, losses)) < 1e-5
