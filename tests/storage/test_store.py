"""Tests of storage.store: the opened store and its record groups."""

from __future__ import annotations

import os
import time

from tricks_helpers.storage.store import Store


def test_shard_grouping_is_linear_in_the_shard_count(tmp_path):
    n = 40_000  # the quadratic version took minutes here
    m = {
        "format": "tar",
        "shards": [f"shard-{i:05d}.tar" for i in range(n)],
        "files": {},
        "records": [[f"k{i}", 1, "0" * 64, i, 1536] for i in range(n)],
        "generation": "0" * 32,
    }
    store = Store(tmp_path, m, os.open(tmp_path, os.O_RDONLY))
    start = time.perf_counter()
    members = store.shard_members()
    assert members[123] == [123] and len(members) == n
    assert time.perf_counter() - start < 5.0
