"""Fixtures of the storage tests (the repository-wide ones in tests/conftest.py reach here too).

- ``stores``: one store per format holding :func:`support.sample_records` (written once per
  test session), as ``(records, {format: path})``.
- ``thirty``: thirty random 2000-byte values keyed ``img/000`` .. ``img/029``.
"""

from __future__ import annotations

import numpy as np
import pytest

from .support import FORMATS, sample_records, write_store


@pytest.fixture(scope="session")
def stores(tmp_path_factory):
    """One store per format holding the same records (written once; tests only read them)."""
    root = tmp_path_factory.mktemp("stores")
    recs = sample_records()
    return recs, {fmt: (write_store(root / fmt, recs, fmt), root / fmt)[1] for fmt in FORMATS}


@pytest.fixture()
def thirty():
    rng = np.random.default_rng(1)
    return [
        (f"img/{i:03d}", rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()) for i in range(30)
    ]
