"""Tests of tricks_helpers.traffic: bytes read and written by ATen operators."""

import pytest
import torch
from torch import nn

from tricks_helpers import traffic


def test_a_1x1_convolution_reads_input_and_weight_and_writes_output_once():
    conv = nn.Conv2d(16, 32, 1, bias=False)
    x = torch.randn(2, 16, 5, 5)
    expected = 4 * (2 * 16 * 25 + 16 * 32 + 2 * 32 * 25)
    assert traffic.bytes_accessed(conv, x) == expected
    assert traffic.bytes_by_op(conv, x) == {"aten.convolution": expected}


def test_dtype_sets_the_bytes_per_element():
    a = torch.randn(8, 8)
    assert traffic.bytes_accessed(torch.mm, a.double(), a.double()) == 2 * traffic.bytes_accessed(
        torch.mm, a, a
    )


def test_views_and_allocations_move_no_data_and_in_place_ops_read_and_write():
    x = torch.randn(4, 6)
    assert traffic.bytes_accessed(lambda: x.view(6, 4).t().detach()) == 0
    assert traffic.bytes_accessed(lambda: torch.empty(1000)) == 0
    y = x.clone()
    assert traffic.bytes_by_op(torch.relu_, y) == {"aten.relu_": 2 * 4 * 6 * 4}


def test_a_non_contiguous_view_counts_the_elements_it_views():
    x = torch.randn(10, 10)
    # a (10, 5) strided view is read, a (10, 5) contiguous copy is written
    assert traffic.bytes_accessed(lambda: x[:, ::2].contiguous()) == 2 * 10 * 5 * 4


def test_lists_of_tensors_are_counted_and_grad_mode_is_respected():
    a, b = torch.randn(3, 4), torch.randn(5, 4)
    assert traffic.bytes_accessed(torch.cat, [a, b]) == 2 * (12 + 20) * 4
    lin = nn.Linear(4, 2)
    fwd = traffic.bytes_accessed(lin, a)
    both = traffic.bytes_accessed(lambda: lin(a).sum().backward(), grad=True)
    assert both > fwd
    assert lin.weight.grad is not None
    assert torch.randn(2).requires_grad is False  # no mode left behind


def test_errors():
    with pytest.raises(TypeError, match="bytes_accessed: fn must be callable"):
        traffic.bytes_accessed(3)
    with pytest.raises(TypeError, match="bytes_by_op: grad must be True or False"):
        traffic.bytes_by_op(lambda: None, grad="yes")


def test_the_mode_is_removed_when_the_call_raises():
    def boom():
        torch.ones(2) + 1
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        traffic.bytes_accessed(boom)
    assert traffic.bytes_accessed(lambda: None) == 0
    assert torch.is_grad_enabled()


def test_foreach_in_place_ops_read_and_write_and_out_arguments_are_only_written():
    ts = [torch.randn(3), torch.randn(5)]
    assert traffic.bytes_by_op(torch._foreach_mul_, ts, 2.0) == {"aten._foreach_mul_": 2 * 8 * 4}
    a, b, res = torch.randn(4), torch.randn(4), torch.empty(4)
    assert traffic.bytes_accessed(lambda: torch.add(a, b, out=res)) == 3 * 4 * 4
