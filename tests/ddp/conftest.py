"""Fixtures of the chapter 08 family's tests."""

from __future__ import annotations

import pytest
import torch.distributed as dist


@pytest.fixture
def gloo_group():
    """A one-rank gloo process group in this process, destroyed afterwards."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
