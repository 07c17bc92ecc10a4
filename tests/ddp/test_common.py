"""Tests of tricks_helpers.ddp.common: per-rank result files and the all-reduce counter."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from tricks_helpers import ddp


def test_write_result_names_the_file_after_the_run_and_rank(tmp_path):
    path = ddp.write_result(tmp_path, {"name": "ddp", "rank": 1, "world_size": 2, "x": [1.5]})
    assert path == tmp_path / "ddp.rank1.json"
    assert json.loads(path.read_text())["x"] == [1.5]
    assert [p.name for p in tmp_path.iterdir()] == ["ddp.rank1.json"]  # no temporary left
    (tmp_path / "ddp.rank0.json").write_text(
        json.dumps({"name": "ddp", "rank": 0, "world_size": 2})
    )
    assert [r["rank"] for r in ddp.load_results(tmp_path, "ddp", 2)] == [0, 1]  # read back


def test_write_json_writes_nothing_when_data_is_not_json(tmp_path):
    with pytest.raises(TypeError, match="not JSON serializable"):
        ddp.write_json(tmp_path / "a.json", {"t": torch.ones(1)})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError, match="path must be str or PathLike"):
        ddp.write_json(3, {})


@pytest.mark.parametrize(
    "out, result, error, match",
    [
        (3, {"name": "a", "rank": 0}, TypeError, "out_dir must be"),
        (".", [("name", "a")], TypeError, "result must be dict"),
        (".", {"rank": 0}, ValueError, "result has no 'name'"),
        (".", {}, ValueError, "result has no 'name' or 'rank'"),
        (".", {"name": 3, "rank": 0}, TypeError, "result\\['name'\\] must be str"),
        (".", {"name": "a", "rank": -1}, ValueError, "result\\['rank'\\] must be an integer >= 0"),
        ("missing", {"name": "a", "rank": 0}, ValueError, "out_dir: no such directory"),
    ],
)
def test_write_result_errors(tmp_path, monkeypatch, out, result, error, match):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=match):
        ddp.write_result(out, result)
    assert list(tmp_path.iterdir()) == []


def test_all_reduce_counter_counts_buckets_and_averages(gloo_group):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    net = nn.parallel.DistributedDataParallel(model)
    counter = ddp.AllReduceCounter()
    net.register_comm_hook(counter, ddp.AllReduceCounter.hook)
    x = torch.randn(3, 4)
    for _ in range(3):
        net(x).sum().backward()
    assert counter.calls == 3  # one bucket per backward
    plain = nn.Linear(4, 2)
    plain.load_state_dict(model.state_dict())
    plain.weight.grad = None
    (3 * plain(x).sum()).backward()  # one rank: the mean of one is the gradient itself
    assert torch.allclose(model.weight.grad, plain.weight.grad)


def test_write_json_never_shares_a_temporary_with_another_writer(tmp_path):
    """Issue 42: one fixed ``<file>.tmp`` lost writes when two writers met there."""
    (tmp_path / "a.json.tmp").mkdir()  # another writer's (or a stale) temporary at the old name
    ddp.write_json(tmp_path / "a.json", {"x": 1})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.json.tmp"]


def test_concurrent_write_json_of_one_file_loses_no_write(tmp_path):
    import threading

    errors = []

    def writer(n):
        for i in range(100):
            try:
                ddp.write_json(tmp_path / "a.json", {"writer": n, "i": i})
            except OSError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
