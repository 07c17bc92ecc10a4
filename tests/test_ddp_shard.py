"""Tests of tricks_helpers.ddp_shard: shard bytes, the model, and a 2-rank gloo FSDP2/DDP run."""

from __future__ import annotations

import sys

import pytest
import torch
from torch import nn

from tricks_helpers import ddp_check, ddp_shard, launch

pytestmark = pytest.mark.usefixtures("one_thread")


def test_make_mlp_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(3)
    before = torch.get_rng_state()
    a, b = ddp_shard.make_mlp(0), ddp_shard.make_mlp(0)
    assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a[0].weight, ddp_shard.make_mlp(1)[0].weight)
    assert ddp_shard.tensor_bytes(a.parameters()) == 4 * (32 * 512 + 512 + 512 * 512 + 512 + 5130)


@pytest.mark.parametrize("world, shares", [(1, [5]), (2, [3, 2]), (4, [2, 2, 1, 0])])
def test_expected_shard_bytes_split_rows_like_chunk(world, shares):
    layer = nn.Linear(7, 5)  # weight 5 x 7, bias 5: rows split 3/2 over two ranks
    got = [ddp_shard.expected_shard_bytes(layer, world, r) for r in range(world)]
    assert got == [4 * (7 * s + s) for s in shares]
    assert sum(got) == ddp_shard.tensor_bytes(layer.parameters())
    padded = 4 * (7 + 1) * -(-5 // world)  # ceil(rows / world) rows: FSDP's padded shard
    assert all(g <= padded and abs(g - sum(got) / world) <= padded for g in got)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ddp_shard.expected_shard_bytes("m", 2, 0), TypeError, "model must be"),
        (lambda: ddp_shard.expected_shard_bytes(nn.Linear(2, 2), 0, 0), ValueError, "world_size"),
        (lambda: ddp_shard.expected_shard_bytes(nn.Linear(2, 2), 2, 2), ValueError, "rank must"),
        (lambda: ddp_shard.tensor_bytes([torch.ones(2), 3]), TypeError, "tensors\\[1\\] must be"),
        (lambda: ddp_shard.tensor_bytes(3.0), TypeError, "tensor_bytes: tensors must be an"),
        (lambda: ddp_shard.make_mlp(-1), ValueError, "seed must be an integer >= 0"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_run_variants_checks_before_it_starts_and_main_refuses_outside_torchrun(
    tmp_path, monkeypatch, capsys
):
    with pytest.raises(ValueError, match="names must be one of 'ddp'"):
        ddp_shard.run_variants(["zero3"], tmp_path)
    for names in ("ddp", [], ["ddp", "ddp"]):
        with pytest.raises(ValueError, match="names must be distinct variant names"):
            ddp_shard.run_variants(names, tmp_path)
    with pytest.raises(TypeError, match="names must be"):
        ddp_shard.run_variants({"ddp"}, tmp_path)
    with pytest.raises(ValueError, match="out_dir: no such directory"):
        ddp_shard.run_variants(["ddp"], tmp_path / "missing")
    with pytest.raises(TypeError, match="out_dir must be"):
        ddp_shard.run_variants(["ddp"], 3)
    with pytest.raises(ValueError, match="rounds must be an integer >= 1"):
        ddp_shard.run_variants(["ddp"], tmp_path, rounds=0)
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SystemExit):
        ddp_shard.main(["--out", str(tmp_path), "--variant", "ddp"])
    assert "run me under torchrun" in capsys.readouterr().err


@pytest.mark.skipif(sys.platform == "win32", reason="torchrun with gloo: Linux and macOS")
def test_two_gloo_ranks_fsdp_holds_half_and_trains_like_ddp(tmp_path):
    names = ["ddp", "fsdp", "bucket_view", "small_buckets"]
    args = ["--out", tmp_path, "--rounds", "2", "--steps", "2"]
    args += [a for n in names for a in ("--variant", n)]
    run = launch.run_torchrun("tricks_helpers.ddp_shard", args, module=True, timeout=180)
    assert run.returncode == 0 and run.leftover == 0
    res = {n: ddp_check.load_results(tmp_path, n, 2) for n in names}
    model = ddp_shard.make_mlp(0)
    replica = ddp_shard.tensor_bytes(model.parameters())
    for rank, (d, f) in enumerate(zip(res["ddp"], res["fsdp"])):
        assert d["param_bytes"] == replica and d["optim_bytes"] == 2 * replica  # Adam: 2 moments
        assert f["param_bytes"] == ddp_shard.expected_shard_bytes(model, 2, rank) == replica // 2
        assert f["optim_bytes"] == 2 * f["param_bytes"] and f["allreduce_calls"] == 0
        assert max(abs(a - b) for a, b in zip(d["losses"], f["losses"])) < 1e-5
        assert len(d["losses"]) == 4 and len(d["epoch_seconds"]) == 2
    assert res["ddp"][0]["grad_storages"] == 6 and res["bucket_view"][0]["grad_storages"] == 2
    assert res["small_buckets"][0]["allreduce_calls"] > res["ddp"][0]["allreduce_calls"]
