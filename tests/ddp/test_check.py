"""Tests of tricks_helpers.ddp.check: the one-process reference, DataParallel, reading results."""

from __future__ import annotations

import json

import pytest
import torch

from tricks_helpers import ddp

TINY = dict(epochs=2, batch_size=8, samples=64, hidden=16, features=8)


# tiny models train on one intra-op thread (the shared fixture in conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_thread")


def test_reference_is_deterministic_and_set_epoch_matters():
    cfg = ddp.RunConfig(name="r", **TINY)
    m1, l1 = ddp.train_reference(cfg, 2)
    m2, l2 = ddp.train_reference(cfg, 2)
    assert l1 == l2 and ddp.params_hash(m1) == ddp.params_hash(m2)
    m3, _ = ddp.train_reference(ddp.RunConfig(name="r", set_epoch=False, **TINY), 2)
    assert ddp.params_hash(m3) != ddp.params_hash(m1)


def test_load_results_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results of run 'ddp' for rank 0"):
        ddp.load_results(tmp_path, "ddp", 2)


def _result(name: str, rank: int, world: int = 2) -> dict:
    return {"name": name, "rank": rank, "world_size": world, "final_hash": "0" * 16}


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"name": "ddp", "rank": 1', "not valid JSON"),  # truncated
        (b"\xff\xfe\x00garbage", "not valid JSON"),  # not text
        ("[1, 2]", "not a results object"),
        ('{"name": "ddp", "rank": 0, "world_size": 2}', "holds rank 0"),  # copied from rank 0
        ('{"name": "acc", "rank": 1, "world_size": 2}', "holds run 'acc'"),
        ('{"name": "ddp", "rank": 1, "world_size": 4}', "world size 4"),
    ],
)
def test_load_results_names_the_bad_file(tmp_path, text, match):
    (tmp_path / "ddp.rank0.json").write_text(json.dumps(_result("ddp", 0)))
    bad = tmp_path / "ddp.rank1.json"
    bad.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError, match=match) as info:
        ddp.load_results(tmp_path, "ddp", 2)
    assert str(bad) in str(info.value)


def test_load_results_reads_ranks_in_order(tmp_path):
    for r in (1, 0):
        (tmp_path / f"ddp.rank{r}.json").write_text(json.dumps(_result("ddp", r)))
    assert [r["rank"] for r in ddp.load_results(tmp_path, "ddp", 2)] == [0, 1]
    with pytest.raises(ValueError, match="world_size must be an integer >= 1"):
        ddp.load_results(tmp_path, "ddp", 0)


def test_slowest_epoch_seconds():
    ranks = [{"epoch_seconds": [5.0, 1.0, 2.0]}, {"epoch_seconds": [4.0, 3.0, 1.5]}]
    assert ddp.slowest_epoch_seconds(ranks) == [3.0, 2.0]
    assert ddp.slowest_epoch_seconds(ranks, skip=0) == [5.0, 3.0, 2.0]
    with pytest.raises(ValueError, match="same number of epochs"):
        ddp.slowest_epoch_seconds([{"epoch_seconds": [1.0, 2.0]}, {"epoch_seconds": [1.0]}])
    with pytest.raises(ValueError, match=r"more than skip=3"):
        ddp.slowest_epoch_seconds(ranks, skip=3)
    with pytest.raises(ValueError, match="need the results"):
        ddp.slowest_epoch_seconds([])
    with pytest.raises(TypeError, match="skip must be an integer"):
        ddp.slowest_epoch_seconds(ranks, skip=1.0)


def test_data_parallel_on_cpu_is_the_plain_model():
    """Without CUDA, nn.DataParallel runs the module itself: training is bitwise the same."""
    if torch.cuda.is_available():
        pytest.skip("on CUDA, DataParallel replicates the module: covered by the GPU runner")
    cfg = ddp.RunConfig(name="r", **TINY)
    ref, ref_losses = ddp.train_reference(cfg, 2)
    dp, dp_losses, seconds = ddp.train_data_parallel(cfg, 2)
    assert not isinstance(dp, torch.nn.DataParallel)  # the unwrapped module comes back
    assert dp_losses == ref_losses and ddp.params_hash(dp) == ddp.params_hash(ref)
    assert len(seconds) == cfg.epochs and all(s > 0 for s in seconds)
