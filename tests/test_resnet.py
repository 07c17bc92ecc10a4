"""Tests of tricks_helpers.resnet (chapter 06)."""

import pytest
import torch
from torch import nn

from tricks_helpers.resnet import RESNET18_PARAMETERS, BasicBlock, ResNet, resnet18

# small forwards run on one intra-op thread (the shared fixture in conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_thread")


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def test_parameter_count_equals_torchvision():
    model = resnet18()
    assert n_params(model) == RESNET18_PARAMETERS == 11_689_512
    # 10 classes: the head shrinks from 512*1000+1000 to 512*10+10
    assert n_params(resnet18(10)) == RESNET18_PARAMETERS - 513 * 1000 + 513 * 10


def test_state_dict_layout_matches_torchvision_names():
    sd = resnet18().state_dict()
    assert len(sd) == 122  # 62 parameters + 20 BatchNorms x 3 buffers
    for key, shape in [
        ("conv1.weight", (64, 3, 7, 7)),
        ("bn1.running_var", (64,)),
        ("layer1.0.conv1.weight", (64, 64, 3, 3)),
        ("layer2.0.downsample.0.weight", (128, 64, 1, 1)),
        ("layer4.1.bn2.num_batches_tracked", ()),
        ("fc.weight", (1000, 512)),
    ]:
        assert tuple(sd[key].shape) == shape, key
    assert "layer1.0.downsample.0.weight" not in sd
    convs = [m for m in resnet18().modules() if isinstance(m, nn.Conv2d)]
    bns = [m for m in resnet18().modules() if isinstance(m, nn.BatchNorm2d)]
    assert len(convs) == len(bns) == 20 and all(c.bias is None for c in convs)


def test_output_shapes():
    model = resnet18(10).eval()
    with torch.no_grad():
        assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)
        assert model(torch.randn(1, 3, 16, 24)).shape == (1, 10)
    block = BasicBlock(8, 16, stride=2).eval()
    assert block(torch.randn(1, 8, 10, 10)).shape == (1, 16, 5, 5)
    assert BasicBlock(8, 8).downsample is None


def test_deterministic_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b, c = resnet18(10, seed=3), resnet18(10, seed=3), resnet18(10, seed=4)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k
    assert not torch.equal(a.conv1.weight, c.conv1.weight)
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(a.eval()(x), b.eval()(x))


def test_initialisation_follows_torchvision():
    model = resnet18(seed=0)
    assert model.training
    w = model.layer3[0].conv1.weight
    expected_std = (2.0 / (w.shape[0] * 9)) ** 0.5  # kaiming normal, fan_out, relu
    assert abs(w.std().item() / expected_std - 1) < 0.05
    assert torch.equal(model.bn1.weight, torch.ones(64))
    assert torch.equal(model.layer1[0].bn2.bias, torch.zeros(64))
    zero = resnet18(seed=0, zero_init_residual=True)
    assert all(
        torch.equal(b.bn2.weight, torch.zeros_like(b.bn2.weight))
        for b in zero.modules()
        if isinstance(b, BasicBlock)
    )


def test_errors():
    with pytest.raises(ValueError, match=r"resnet18: num_classes must be an integer >= 1"):
        resnet18(0)
    with pytest.raises(TypeError, match="resnet18: num_classes must be an integer, got str"):
        resnet18("10")
    with pytest.raises(TypeError, match="resnet18: seed must be an integer, got bool"):
        resnet18(seed=True)
    with pytest.raises(ValueError, match="ResNet: layers must have 4 entries"):
        ResNet((2, 2, 2))
    with pytest.raises(ValueError, match=r"ResNet: layers\[1\] must be an integer >= 1"):
        ResNet((2, 0, 2, 2))
    with pytest.raises(TypeError, match="ResNet: zero_init_residual must be True or False"):
        ResNet(zero_init_residual="no")
    with pytest.raises(ValueError, match="BasicBlock: stride must be an integer >= 1"):
        BasicBlock(4, 4, stride=0)
