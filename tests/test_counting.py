"""Tests of tricks_helpers.counting: FLOPs and ATen operator counts."""

import pytest
import torch
from torch import nn

from tricks_helpers import counting


def test_flop_count_of_a_matmul_and_a_conv():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    assert counting.flop_count(torch.mm, a, b) == 2 * 8 * 16 * 4
    conv = nn.Conv2d(3, 8, 3, padding=1)
    x = torch.randn(2, 3, 10, 10)
    assert counting.flop_count(conv, x) == 2 * 2 * 8 * 10 * 10 * 3 * 3 * 3


def test_flop_count_with_grad_counts_backward():
    lin = nn.Linear(16, 4)
    x = torch.randn(8, 16)
    forward = counting.flop_count(lin, x)
    both = counting.flop_count(lambda: lin(x).sum().backward(), grad=True)
    assert both == 2 * forward  # backward of a Linear: grad of the weight (input needs none)


def test_aten_op_counts_sees_batch_norm_and_leaves_no_mode_behind():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 4, 3)).eval()
    counts = counting.aten_op_counts(net, torch.randn(1, 3, 8, 8))
    assert counts["aten.convolution"] == 2 and counts["aten.relu"] == 1
    assert sum(v for k, v in counts.items() if "batch_norm" in k) == 1
    assert torch.randn(2).requires_grad is False  # ran normally afterwards


def test_counting_errors():
    with pytest.raises(TypeError, match="fn must be callable"):
        counting.flop_count(3)
    with pytest.raises(TypeError, match="grad must be True or False"):
        counting.aten_op_counts(lambda: None, grad="yes")


def test_count_by_op_is_the_one_dispatcher_counter_weighing_each_call():
    x = torch.randn(4, 4)

    def numel_out(func, args, kwargs, out):  # None leaves a call out
        return None if "relu" in str(func) else out.numel()

    counts = counting.count_by_op(
        "test", lambda: torch.relu(x @ x).sum(), (), {}, grad=False, weigh=numel_out
    )
    assert counts == {"aten.mm": 16, "aten.sum": 1}
    ones = counting.count_by_op("test", lambda: torch.relu(x @ x).sum(), (), {}, grad=False)
    assert ones == counting.aten_op_counts(lambda: torch.relu(x @ x).sum())
    with pytest.raises(TypeError, match="^test: fn must be callable"):
        counting.count_by_op("test", 3, (), {}, grad=False)


def test_traffic_counts_with_this_counter_and_defines_none_of_its_own():
    import inspect

    from torch.utils._python_dispatch import TorchDispatchMode

    from tricks_helpers import traffic

    modes = [
        name
        for name, obj in vars(traffic).items()
        if inspect.isclass(obj) and issubclass(obj, TorchDispatchMode)
    ]
    assert modes == []
    assert traffic.count_by_op is counting.count_by_op
