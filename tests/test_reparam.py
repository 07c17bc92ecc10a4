"""Tests of tricks_helpers.reparam (chapter 06)."""

import pytest
import torch
from torch import nn

from tricks_helpers.reparam import RepVGGBlock, collapse_repvgg, identity_kernel


def trained_block(cin, cout, stride=1, groups=1, seed=0):
    """A block whose BatchNorms saw a few batches (non-trivial running statistics)."""
    torch.manual_seed(seed)
    block = RepVGGBlock(cin, cout, stride=stride, groups=groups)
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
        block.train()
        for _ in range(3):
            block(torch.randn(8, cin, 8, 8) * 2 + 0.3)
    return block.eval()


@pytest.mark.parametrize(
    "cin,cout,stride,groups,has_id",
    [
        (8, 8, 1, 1, True),
        (8, 8, 1, 2, True),
        (8, 8, 1, 8, True),
        (4, 8, 1, 1, False),
        (8, 8, 2, 1, False),
        (6, 12, 2, 3, False),
    ],
)
def test_collapse_equals_block(cin, cout, stride, groups, has_id):
    block = trained_block(cin, cout, stride, groups)
    assert (block.bn_id is not None) == has_id
    fused = collapse_repvgg(block)
    conv = fused[0]
    assert conv.kernel_size == (3, 3) and conv.stride == (stride, stride) and conv.groups == groups
    x = torch.randn(2, cin, 9, 9)
    with torch.no_grad():
        assert torch.allclose(fused(x), block(x), atol=1e-5, rtol=1e-5)
    assert sum(p.numel() for p in fused.parameters()) < sum(p.numel() for p in block.parameters())


def test_identity_kernel_is_identity():
    for groups in (1, 2, 4):
        k = identity_kernel(8, groups)
        x = torch.randn(1, 8, 5, 5)
        assert torch.equal(nn.functional.conv2d(x, k, padding=1, groups=groups), x)
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        identity_kernel(4, 1, 2)
    with pytest.raises(ValueError, match="multiple of groups"):
        identity_kernel(6, 4)
    with pytest.raises(TypeError, match="identity_kernel: channels must be an integer, got float"):
        identity_kernel(4.0)
    with pytest.raises(ValueError, match="identity_kernel: groups must be an integer >= 1"):
        identity_kernel(4, 0)


def test_collapse_errors():
    block = RepVGGBlock(4, 4)
    with pytest.raises(ValueError, match="eval mode"):
        collapse_repvgg(block)
    with pytest.raises(TypeError, match="expected a RepVGGBlock, got Conv2d"):
        collapse_repvgg(nn.Conv2d(4, 4, 3).eval())


def test_block_validates_arguments():
    with pytest.raises(ValueError, match="divisible by groups=3"):
        RepVGGBlock(4, 6, groups=3)
    with pytest.raises(ValueError, match="RepVGGBlock: stride must be an integer >= 1, got 0"):
        RepVGGBlock(4, 4, stride=0)
    with pytest.raises(TypeError, match="RepVGGBlock: in_channels must be an integer, got str"):
        RepVGGBlock("4", 4)
    with pytest.raises(TypeError, match="RepVGGBlock: groups must be an integer, got bool"):
        RepVGGBlock(4, 4, groups=True)
    with pytest.raises(TypeError, match="RepVGGBlock: act must be Module, got builtin_function"):
        RepVGGBlock(4, 4, act=torch.relu)


def test_block_input_untouched_by_collapse():
    block = trained_block(4, 4)
    state = {k: v.clone() for k, v in block.state_dict().items()}
    collapse_repvgg(block)
    assert all(torch.equal(state[k], v) for k, v in block.state_dict().items())


@pytest.mark.parametrize("cin,cout,stride", [(8, 8, 1), (4, 8, 2)])
def test_collapse_keeps_conv_biases(cin, cout, stride):
    """Issue 12: a conv3 (or conv1) given a bias used to be folded without it."""
    block = trained_block(cin, cout, stride)
    with torch.no_grad():
        for name in ("conv3", "conv1"):
            old = getattr(block, name)
            new = nn.Conv2d(cin, cout, old.kernel_size, stride, old.padding, bias=True)
            new.weight.copy_(old.weight)
            new.bias.uniform_(-2, 2)
            setattr(block, name, new.eval())
    fused = collapse_repvgg(block)
    x = torch.randn(2, cin, 9, 9)
    with torch.no_grad():
        assert torch.allclose(fused(x), block(x), atol=1e-5, rtol=1e-5)


def test_collapse_refuses_hooks():
    block = trained_block(4, 4)
    block.conv3.register_forward_hook(lambda m, i, o: None)
    with pytest.raises(ValueError, match="collapse_repvgg: conv3 carries hooks"):
        collapse_repvgg(block)
