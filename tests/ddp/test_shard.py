"""Tests of tricks_helpers.ddp.shard: shard bytes, the CPU mesh, and a 2-rank gloo FSDP2/DDP run."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.distributed as dist
import torch.distributed.fsdp as fsdp
from torch import nn

from tricks_helpers import ddp

pytestmark = pytest.mark.usefixtures("one_thread")


def test_make_mlp_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(3)
    before = torch.get_rng_state()
    a, b = ddp.make_mlp(0), ddp.make_mlp(0)
    assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a[0].weight, ddp.make_mlp(1)[0].weight)
    assert ddp.local_element_bytes(a.parameters()) == 4 * (32 * 512 + 512 + 512 * 512 + 512 + 5130)


@pytest.mark.parametrize("world, shares", [(1, [5]), (2, [3, 2]), (4, [2, 2, 1, 0])])
def test_expected_shard_bytes_split_rows_like_chunk(world, shares):
    layer = nn.Linear(7, 5)  # weight 5 x 7, bias 5: rows split 3/2 over two ranks
    got = [ddp.expected_shard_bytes(layer, world, r) for r in range(world)]
    assert got == [4 * (7 * s + s) for s in shares]
    assert sum(got) == ddp.local_element_bytes(layer.parameters())
    padded = 4 * (7 + 1) * -(-5 // world)  # ceil(rows / world) rows: FSDP's padded shard
    assert all(g <= padded and abs(g - sum(got) / world) <= padded for g in got)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ddp.expected_shard_bytes("m", 2, 0), TypeError, "model must be"),
        (lambda: ddp.expected_shard_bytes(nn.Linear(2, 2), 0, 0), ValueError, "world_size"),
        (lambda: ddp.expected_shard_bytes(nn.Linear(2, 2), 2, 2), ValueError, "rank must"),
        (lambda: ddp.local_element_bytes([torch.ones(2), 3]), TypeError, "tensors\\[1\\] must be"),
        (lambda: ddp.local_element_bytes(3.0), TypeError, "local_element_bytes: tensors must be"),
        (lambda: ddp.make_mlp(-1), ValueError, "seed must be an integer >= 0"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_local_element_bytes_counts_what_a_sparse_tensor_stores():
    """Issue 32: a COO tensor with one value of a 10^6 x 10^6 shape is 20 bytes, not 4 TB."""
    one = torch.sparse_coo_tensor([[3], [5]], [1.0], (10**6, 10**6), check_invariants=True)
    assert ddp.local_element_bytes([one]) == 4 + 2 * 8  # one float32 value, 2 int64 indices
    three = torch.sparse_coo_tensor(
        [[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3), check_invariants=True
    )
    assert ddp.local_element_bytes([three]) == 3 * 4 + 2 * 3 * 8
    assert ddp.local_element_bytes([three.to_dense(), torch.zeros(4, dtype=torch.int8)]) == 28
    view = torch.zeros(10)[:4]  # elements, not storage: a view counts its own 4
    assert ddp.local_element_bytes([view]) == 16


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize("layout", ["to_sparse_csr", "to_sparse_csc"])
def test_local_element_bytes_refuses_other_layouts(layout):
    compressed = getattr(torch.eye(3), layout)()
    with pytest.raises(ValueError, match=r"tensors\[1\] has layout torch.sparse_c.*only strided"):
        ddp.local_element_bytes([torch.ones(2), compressed])


def test_fully_shard_gets_a_cpu_mesh_where_the_accelerator_is_cuda(
    gloo_group, tmp_path, monkeypatch
):
    """Issue 33, item 3: without mesh=, FSDP2 builds its mesh on the accelerator (CUDA on a
    GPU host, under gloo too) and moves the parameters there; the mesh must be the CPU's."""
    monkeypatch.setattr(torch._C, "_get_accelerator", lambda: torch.device("cuda"))
    real, meshes = fsdp.fully_shard, []

    def recording(module, **kwargs):
        meshes.append(kwargs.get("mesh"))
        return real(module, **kwargs)

    monkeypatch.setattr(fsdp, "fully_shard", recording)
    result = ddp.run_variants(["fsdp"], tmp_path, rounds=1, steps=1)["fsdp"]
    assert len(meshes) == 4  # three Linear layers and the whole model
    assert [m.device_type if m is not None else None for m in meshes] == ["cpu"] * 4
    assert [tuple(m.shape) for m in meshes] == [(1,)] * 4
    assert result["device"] == ["cpu"] and len(result["losses"]) == 1
    assert (tmp_path / "fsdp.rank0.json").is_file()


def test_cpu_mesh_needs_a_gloo_group(gloo_group, monkeypatch):
    mesh = ddp.cpu_mesh()
    assert mesh.device_type == "cpu" and tuple(mesh.shape) == (1,)
    monkeypatch.setattr(dist, "get_backend", lambda *a: "nccl")
    with pytest.raises(ValueError, match="must use gloo \\(CPU\\), got 'nccl'"):
        ddp.cpu_mesh()


def test_cpu_mesh_and_run_variants_refuse_without_a_process_group(tmp_path):
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="cpu_mesh: no process group"):
        ddp.cpu_mesh()
    with pytest.raises(ValueError, match="needs an initialised gloo process group .* got none"):
        ddp.run_variants(["ddp"], tmp_path)


def test_run_variants_checks_before_it_starts(tmp_path):
    with pytest.raises(ValueError, match="names must be one of 'ddp'"):
        ddp.run_variants(["zero3"], tmp_path)
    for names in ("ddp", [], ["ddp", "ddp"]):
        with pytest.raises(ValueError, match="names must be distinct variant names"):
            ddp.run_variants(names, tmp_path)
    with pytest.raises(TypeError, match="names must be"):
        ddp.run_variants({"ddp"}, tmp_path)
    with pytest.raises(ValueError, match="out_dir: no such directory"):
        ddp.run_variants(["ddp"], tmp_path / "missing")
    with pytest.raises(TypeError, match="out_dir must be"):
        ddp.run_variants(["ddp"], 3)
    with pytest.raises(ValueError, match="rounds must be an integer >= 1"):
        ddp.run_variants(["ddp"], tmp_path, rounds=0)


@pytest.mark.skipif(sys.platform == "win32", reason="torchrun with gloo: Linux and macOS")
def test_two_gloo_ranks_fsdp_holds_half_and_trains_like_ddp(tmp_path):
    names = ["ddp", "fsdp", "bucket_view", "small_buckets"]
    args = ["shard", "--out", tmp_path, "--rounds", "2", "--steps", "2"]
    args += [a for n in names for a in ("--variant", n)]
    run = ddp.run_torchrun("tricks_helpers.ddp", args, module=True, timeout=180)
    assert run.returncode == 0 and run.leftover == 0
    res = {n: ddp.load_results(tmp_path, n, 2) for n in names}
    model = ddp.make_mlp(0)
    replica = ddp.local_element_bytes(model.parameters())
    for rank, (d, f) in enumerate(zip(res["ddp"], res["fsdp"])):
        assert d["param_bytes"] == replica and d["optim_bytes"] == 2 * replica  # Adam: 2 moments
        assert f["param_bytes"] == ddp.expected_shard_bytes(model, 2, rank) == replica // 2
        assert f["optim_bytes"] == 2 * f["param_bytes"] and f["allreduce_calls"] == 0
        assert f["device"] == d["device"] == ["cpu"]  # FSDP2's mesh is the CPU's (cpu_mesh)
        assert max(abs(a - b) for a, b in zip(d["losses"], f["losses"])) < 1e-5
        assert len(d["losses"]) == 4 and len(d["epoch_seconds"]) == 2
    assert res["ddp"][0]["grad_storages"] == 6 and res["bucket_view"][0]["grad_storages"] == 2
    assert res["small_buckets"][0]["allreduce_calls"] > res["ddp"][0]["allreduce_calls"]
