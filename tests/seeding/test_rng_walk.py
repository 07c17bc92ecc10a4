"""Tests of tricks_helpers.seeding.rng_walk (chapter 01): the walk that finds RNG objects."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tricks_helpers.seeding import find_rng_objects, rng_walk


def test_find_rng_objects_visits_each_rng_once_in_walk_order():
    shared = np.random.default_rng(0)

    class Holder:
        def __init__(self):
            self.a = shared
            self.parts = [random.Random(1), shared, {"g": torch.Generator()}]

    seen = []
    walk = find_rng_objects(Holder(), root="h", visit=lambda rng, path: seen.append((rng, path)))
    assert (
        [path for _, path in seen] == list(walk.paths) == ["h.a", "h.parts[0]", "h.parts[2]['g']"]
    )
    assert seen[0][0] is shared


def test_reseed_rng_sets_the_same_state_for_the_same_seed():
    for make in (np.random.default_rng, np.random.RandomState, random.Random):
        a, b = make(1), make(2)
        rng_walk.reseed_rng(a, 7)
        rng_walk.reseed_rng(b, 7)
        draw = (lambda r: r.random()) if isinstance(a, random.Random) else (lambda r: r.random(3))
        assert np.array_equal(draw(a), draw(b))
    g, h = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    rng_walk.reseed_rng(g, 7)
    rng_walk.reseed_rng(h, 7)
    assert torch.equal(torch.rand(3, generator=g), torch.rand(3, generator=h))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"root": 3}, "find_rng_objects: root must be str"),
        ({"visit": "reseed"}, "find_rng_objects: visit must be callable"),
    ],
)
def test_find_rng_objects_type_errors(kwargs, match):
    with pytest.raises(TypeError, match=match):
        find_rng_objects(object(), **kwargs)
