"""Tests of tricks_helpers.ddp.worker_seeding: worker streams across ranks, simulated and gloo."""

from __future__ import annotations

import multiprocessing
import sys

import pytest
import torch

from tricks_helpers import ddp

MP = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"

pytestmark = pytest.mark.usefixtures("one_thread")


def simulate(seeding, world=2, epochs=2, seed=0, samples=16):
    """Every rank of a run, one after the other in this process, each seeded alike."""
    results = []
    for rank in range(world):
        torch.manual_seed(seed)
        data = ddp.AugmentedItems(samples, seed)
        loader = ddp.make_loader(data, rank, world, seeding, multiprocessing_context=MP, seed=seed)
        results.append({"streams": ddp.record_streams(loader, epochs)})
    return results


def test_items_draw_from_torch_and_their_own_generator():
    data = ddp.AugmentedItems(4, seed=7)
    torch.manual_seed(0)
    first = [data[i] for i in range(4)]
    assert [x[:2] for x in first] == [(i, -1) for i in range(4)]
    assert len({x[2] for x in first}) == 4 and len({x[3] for x in first}) == 4
    assert ddp.AugmentedItems(4, seed=7)[0][3] == first[0][3]  # seeded in __init__


@pytest.mark.parametrize(
    "seeding, ranks, workers",
    [
        # (torch, numpy) streams repeated on another rank / on another worker, of 8
        ("alike", (8, 8), (0, 8)),
        ("seed_worker", (8, 8), (0, 0)),
        ("rank", (0, 8), (0, 8)),
        ("rank_seed_worker", (0, 0), (0, 0)),
    ],
)
def test_only_the_rank_in_the_generator_with_seed_worker_removes_every_repeat(
    seeding, ranks, workers
):
    rep = ddp.count_repeats(simulate(seeding))
    assert rep.streams == 8 and rep.constant == {"torch": 0, "numpy": 0}
    assert (rep.across_ranks["torch"], rep.across_ranks["numpy"]) == ranks
    assert (rep.across_workers["torch"], rep.across_workers["numpy"]) == workers
    assert str(rep).startswith(f"torch: {ranks[0]} of 8 streams repeated on another rank")


def test_the_fix_is_reproducible_run_to_run_and_shards_are_disjoint():
    a, b = simulate("rank_seed_worker"), simulate("rank_seed_worker")
    assert a == b
    other_seed = simulate("rank_seed_worker", seed=1)
    assert other_seed[0]["streams"] != a[0]["streams"]
    # documented caveat of seed + rank: run seed 1's rank 0 draws run seed 0's rank 1 noise
    noise = [
        [{k: w[k] for k in ("torch", "numpy")} for w in e]
        for r in (other_seed[0], a[1])
        for e in r["streams"]
    ]
    assert noise[:2] == noise[2:]
    for e in range(2):
        idx = [i for r in a for w in r["streams"][e] for i in w["indices"]]
        assert sorted(idx) == list(range(16))


def test_count_repeats_sees_a_repeat_on_a_different_worker_id():
    s = [[{"torch": [1.0, 2.0], "numpy": [1.0, 2.0]}, {"torch": [3.0, 4.0], "numpy": [5.0, 6.0]}]]
    swapped = [[s[0][1], s[0][0]]]
    rep = ddp.count_repeats([{"streams": s}, {"streams": swapped}])
    assert rep.across_ranks == {"torch": 4, "numpy": 4} and rep.across_workers["torch"] == 0
    const = [[{"torch": [1.0, 1.0], "numpy": [1.0, 2.0]}, {"torch": [3.0], "numpy": [5.0]}]]
    assert ddp.count_repeats([{"streams": const}] * 2).constant == {"torch": 4, "numpy": 2}


@pytest.mark.parametrize(
    "results, error, match",
    [
        ("xy", TypeError, "rank_results\\[0\\] must be"),
        ({"streams": []}, TypeError, "rank_results must be"),
        ([{"streams": [[{"torch": [1.0], "numpy": [1.0]}]]}], ValueError, "at least 2 ranks"),
        ([{"streams": []}, {}], ValueError, "rank_results\\[1\\] has no 'streams'"),
        (
            [{"streams": [[{"torch": [1], "numpy": [1]}]]}, {"streams": [[]]}],
            ValueError,
            "ranks differ in epochs or workers",
        ),
        ([{"streams": [[{"torch": [], "numpy": [1]}]]}] * 2, ValueError, "made no draws"),
    ],
)
def test_count_repeats_errors(results, error, match):
    with pytest.raises(error, match=match):
        ddp.count_repeats(results)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(seeding="random"), ValueError, "seeding must be one of 'alike'"),
        (dict(rank=2), ValueError, "rank must be an integer in \\[0, 1\\]"),
        (dict(world_size=0), ValueError, "world_size must be an integer >= 1"),
        (dict(multiprocessing_context="thread"), ValueError, "multiprocessing_context must be one"),
        (dict(multiprocessing_context=None), TypeError, "multiprocessing_context must be"),
        (dict(num_workers=0), ValueError, "num_workers must be an integer >= 1"),
        (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
        (dict(rank=1.0), TypeError, "rank must be an integer"),
    ],
)
def test_make_loader_errors(kwargs, error, match):
    args = dict(rank=0, world_size=2, seeding="alike", multiprocessing_context=MP) | kwargs
    with pytest.raises(error, match=match):
        ddp.make_loader(ddp.AugmentedItems(8), **args)


def test_record_streams_and_items_errors():
    data = ddp.AugmentedItems(8)
    with pytest.raises(TypeError, match="loader must be"):
        ddp.record_streams([data], 1)
    no_workers = torch.utils.data.DataLoader(data, batch_size=2, collate_fn=list)
    with pytest.raises(ValueError, match="has no workers"):
        ddp.record_streams(no_workers, 1)
    loader = ddp.make_loader(data, 0, 1, "alike", multiprocessing_context=MP)
    with pytest.raises(ValueError, match="epochs must be an integer >= 1"):
        ddp.record_streams(loader, 0)
    with pytest.raises(ValueError, match="samples must be an integer >= 1"):
        ddp.AugmentedItems(0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        ddp.AugmentedItems(4, seed="0")


def test_run_rank_checks_out_dir(tmp_path):
    with pytest.raises(ValueError, match="out_dir: no such directory"):
        ddp.run_rank("alike", tmp_path / "missing", multiprocessing_context=MP)


@pytest.mark.skipif(sys.platform == "win32", reason="torchrun with gloo: Linux and macOS")
def test_two_gloo_ranks_repeat_streams_until_the_rank_is_in_the_generator(tmp_path):
    args = ["seeding", "--out", tmp_path, "--seeding", "alike", "--seeding", "rank_seed_worker"]
    run = ddp.run_torchrun(
        "tricks_helpers.ddp",
        [*args, "--mp-context", MP],
        module=True,
        nproc_per_node=2,
        timeout=180,
    )
    assert run.returncode == 0 and run.leftover == 0
    alike = ddp.load_results(tmp_path, "alike", 2)
    fixed = ddp.load_results(tmp_path, "rank_seed_worker", 2)
    assert alike[0]["multiprocessing_context"] == MP
    assert ddp.count_repeats(alike).across_ranks == {"torch": 8, "numpy": 8}
    assert ddp.count_repeats(fixed).across_ranks == {"torch": 0, "numpy": 0}
    # the processes drew what one process simulating both ranks draws
    assert [r["streams"] for r in fixed] == [
        r["streams"] for r in simulate("rank_seed_worker", samples=32)
    ]
