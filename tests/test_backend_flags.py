"""Tests of tricks_helpers.backend_flags: flags scoped to a block and restored."""

from __future__ import annotations

import pytest
import torch

from tricks_helpers import backend_flags


def test_cudnn_benchmark_is_set_inside_and_restored_after_an_error():
    before = torch.backends.cudnn.benchmark
    with pytest.raises(KeyError):
        with backend_flags.cudnn_benchmark(not before) as previous:
            assert previous is before
            assert torch.backends.cudnn.benchmark is (not before)
            raise KeyError("boom")
    assert torch.backends.cudnn.benchmark is before


def test_cudnn_conv_fp32_precision_is_set_inside_and_restored():
    before = torch.backends.cudnn.conv.fp32_precision
    other = "ieee" if before != "ieee" else "tf32"
    with pytest.raises(KeyError):
        with backend_flags.cudnn_conv_fp32_precision(other) as previous:
            assert previous == before
            assert torch.backends.cudnn.conv.fp32_precision == other
            raise KeyError("boom")
    assert torch.backends.cudnn.conv.fp32_precision == before


def test_bad_values_change_nothing():
    before = (torch.backends.cudnn.benchmark, torch.backends.cudnn.conv.fp32_precision)
    with pytest.raises(TypeError, match="^cudnn_benchmark: enabled must be True or False"):
        with backend_flags.cudnn_benchmark(1):
            pass
    with pytest.raises(
        ValueError, match="precision must be one of 'none', 'ieee', 'tf32'; got 'fp16'"
    ):
        with backend_flags.cudnn_conv_fp32_precision("fp16"):
            pass
    with pytest.raises(TypeError, match="precision must be str, got int"):
        with backend_flags.cudnn_conv_fp32_precision(32):
            pass
    assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.conv.fp32_precision) == before
