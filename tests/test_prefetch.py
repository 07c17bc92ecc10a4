"""Tests of tricks_helpers.prefetch: ordering logic and the CPU pass-through."""

from __future__ import annotations

import pytest
import torch

from tricks_helpers import prefetch


def test_lookahead_loads_the_next_item_before_yielding():
    log = []

    def load(x):
        log.append(f"load {x}")
        return x * 10

    for y in prefetch.lookahead([1, 2, 3], load):
        log.append(f"use {y}")
    assert log == ["load 1", "load 2", "use 10", "load 3", "use 20", "use 30"]
    assert list(prefetch.lookahead([], load)) == []
    assert list(prefetch.lookahead(iter([4]), load)) == [40]


def test_lookahead_rejects_a_non_callable():
    with pytest.raises(TypeError, match="^lookahead: load must be callable"):
        list(prefetch.lookahead([1], "load"))


def test_batch_to_walks_nested_batches_and_keeps_other_values():
    x, y = torch.ones(2), torch.zeros(2, dtype=torch.long)
    batch = {"x": x, "pair": (y, [x]), "name": "a.jpg", "n": 3}
    moved = prefetch.batch_to(batch, torch.device("cpu"))
    assert moved["name"] == "a.jpg" and moved["n"] == 3
    assert torch.equal(moved["x"], x) and torch.equal(moved["pair"][1][0], x)
    assert isinstance(moved["pair"], tuple) and isinstance(moved["pair"][1], list)


def test_cpu_prefetcher_passes_batches_through_unchanged_and_says_so():
    batches = [(torch.randn(3), 1), (torch.randn(3), 2)]
    pf = prefetch.CUDAPrefetcher(batches, "cpu")
    out = list(pf)
    assert all(a is b for a, b in zip(out, batches)) and len(out) == 2
    assert pf.note == "cpu: batches pass through unchanged (no host-to-device copy to overlap)"


@pytest.mark.parametrize(
    "loader, device, error, match",
    [
        (3, "cpu", TypeError, "loader must be Iterable, got int"),
        ([], 0, TypeError, "device must be str or device, got int"),
        ([], "meta", ValueError, "expected a 'cpu' or 'cuda' device, got 'meta'"),
    ],
)
def test_bad_arguments(loader, device, error, match):
    with pytest.raises(error, match=f"^CUDAPrefetcher: {match}"):
        prefetch.CUDAPrefetcher(loader, device)


def test_cuda_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA requested but"):
        prefetch.CUDAPrefetcher([], "cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_prefetcher_yields_the_same_batches_on_the_gpu():
    batches = [(torch.randn(4).pin_memory(), torch.tensor([i])) for i in range(3)]
    out = list(prefetch.CUDAPrefetcher(batches, "cuda"))
    assert all(x.is_cuda and torch.equal(x.cpu(), b[0]) for (x, _), b in zip(out, batches))
