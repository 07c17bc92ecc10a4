"""Tests of tricks_helpers.fusion (chapter 06)."""

import copy
import random

import pytest
import torch
from torch import nn
from torch.ao.quantization import fuse_modules
from torch.nn.utils.fusion import fuse_conv_bn_eval

from tricks_helpers.fusion import fuse_conv_bn, fuse_conv_bn_weights, fuse_model

CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
SPATIAL = {1: 17, 2: 9, 3: 6}


def make_pair(dim, cin=4, cout=6, k=3, stride=1, padding=1, dilation=1, groups=1, bias=True,
              affine=True, padding_mode="zeros", seed=0):
    """A conv + BN in eval mode with non-trivial statistics and affine parameters."""
    g = torch.Generator().manual_seed(seed)
    conv = CONV[dim](cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias=bias, padding_mode=padding_mode)
    bn = BN[dim](cout, affine=affine)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g))
        if bias:
            conv.bias.copy_(torch.randn(cout, generator=g))
        bn.running_mean.copy_(torch.randn(cout, generator=g))
        bn.running_var.copy_(torch.rand(cout, generator=g) * 2 + 0.1)
        if affine:
            bn.weight.copy_(torch.randn(cout, generator=g))
            bn.bias.copy_(torch.randn(cout, generator=g))
    return conv.eval(), bn.eval()


def make_input(dim, cin, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, cin, *([SPATIAL[dim]] * dim), generator=g)


def check_against_references(conv, bn, x, tol=1e-4):
    ref = bn(conv(x))
    fused = fuse_conv_bn(conv, bn)
    out = fused(x)
    scale = ref.abs().max().item() + 1
    assert (out - ref).abs().max().item() <= tol * scale
    torch_ref = fuse_conv_bn_eval(copy.deepcopy(conv), copy.deepcopy(bn))
    assert (out - torch_ref(x)).abs().max().item() <= tol * scale
    assert torch.allclose(fused.weight, torch_ref.weight, rtol=1e-4, atol=1e-5)
    assert torch.allclose(fused.bias, torch_ref.bias, rtol=1e-4, atol=1e-5)
    return fused


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_matches_bn_of_conv_and_torch_reference(dim, bias, affine):
    conv, bn = make_pair(dim, bias=bias, affine=affine)
    fused = check_against_references(conv, bn, make_input(dim, 4))
    assert type(fused) is CONV[dim]
    assert fused.bias is not None
    assert not fused.training


def test_random_configurations_property_style():
    """Seeded loop over many random conv configurations (hypothesis is not installed)."""
    rng = random.Random(1234)
    for case in range(60):
        dim = rng.choice([1, 2, 3])
        groups = rng.choice([1, 2, 4])
        cin = groups * rng.randint(1, 3)
        cout = groups * rng.randint(1, 3)
        k = rng.choice([1, 2, 3])
        padding_mode = rng.choice(["zeros", "zeros", "reflect", "circular", "replicate"])
        padding = rng.choice([0, 1, 2]) if padding_mode == "zeros" else rng.choice([0, 1])
        conv, bn = make_pair(dim, cin=cin, cout=cout, k=k, stride=rng.choice([1, 2]),
                             padding=padding, dilation=rng.choice([1, 2]), groups=groups,
                             bias=rng.random() < 0.5, affine=rng.random() < 0.5,
                             padding_mode=padding_mode, seed=case)
        try:
            check_against_references(conv, bn, make_input(dim, cin, seed=case))
        except AssertionError as e:  # pragma: no cover - failure message only
            raise AssertionError(f"case {case}: {conv} {bn}") from e


def test_matches_torch_ao_fuse_modules():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
    model[1].running_mean.uniform_(-1, 1)
    model[1].running_var.uniform_(0.5, 2)
    model.eval()
    ao_fused = fuse_modules(copy.deepcopy(model), [["0", "1"]])
    ours = fuse_conv_bn(model[0], model[1])
    x = torch.randn(2, 3, 10, 10)
    assert torch.allclose(ours(x), ao_fused[0](x), atol=1e-5)
    assert torch.allclose(nn.Sequential(ours, nn.ReLU())(x), model(x), atol=1e-5)


def test_inputs_untouched_and_independent_copy():
    conv, bn = make_pair(2)
    before = {k: v.clone() for k, v in list(conv.state_dict().items()) + [
        ("bn." + k, v) for k, v in bn.state_dict().items()]}
    fused = fuse_conv_bn(conv, bn)
    after = {k: v for k, v in list(conv.state_dict().items()) + [
        ("bn." + k, v) for k, v in bn.state_dict().items()]}
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert fused is not conv and fused.weight.data_ptr() != conv.weight.data_ptr()


def test_float64_conv_keeps_dtype_and_is_exact():
    conv, bn = make_pair(2)
    conv, bn = conv.double(), bn.double()
    fused = fuse_conv_bn(conv, bn)
    assert fused.weight.dtype == torch.float64
    x = make_input(2, 4).double()
    assert (fused(x) - bn(conv(x))).abs().max().item() < 1e-10


def test_refuses_training_mode():
    conv, bn = make_pair(2)
    with pytest.raises(ValueError, match="eval mode"):
        fuse_conv_bn(conv, bn.train())
    with pytest.raises(ValueError, match="eval mode"):
        fuse_conv_bn(conv.train(), bn.eval())


def test_refuses_channel_mismatch():
    conv = nn.Conv2d(3, 8, 3).eval()
    with pytest.raises(ValueError, match="channel mismatch: conv has out_channels=8"):
        fuse_conv_bn(conv, nn.BatchNorm2d(4).eval())


def test_refuses_wrong_types():
    bn = nn.BatchNorm2d(8).eval()
    with pytest.raises(TypeError, match="expected nn.Conv1d/Conv2d/Conv3d, got ConvTranspose2d"):
        fuse_conv_bn(nn.ConvTranspose2d(3, 8, 3).eval(), bn)
    with pytest.raises(TypeError, match="expected nn.Conv1d/Conv2d/Conv3d, got Linear"):
        fuse_conv_bn(nn.Linear(3, 8).eval(), bn)
    with pytest.raises(TypeError, match="Conv2d must be followed by BatchNorm2d, got BatchNorm1d"):
        fuse_conv_bn(nn.Conv2d(3, 8, 3).eval(), nn.BatchNorm1d(8).eval())
    with pytest.raises(TypeError, match="got LayerNorm"):
        fuse_conv_bn(nn.Conv2d(3, 8, 3).eval(), nn.LayerNorm(8).eval())


def test_refuses_bn_without_running_stats():
    conv = nn.Conv2d(3, 8, 3).eval()
    with pytest.raises(ValueError, match="track_running_stats=False"):
        fuse_conv_bn(conv, nn.BatchNorm2d(8, track_running_stats=False).eval())


def test_fuse_conv_bn_weights_validates():
    w = torch.randn(4, 2, 3, 3)
    ones, zeros = torch.ones(4), torch.zeros(4)
    with pytest.raises(ValueError, match=r"running_mean has shape \(3,\), expected \(4,\)"):
        fuse_conv_bn_weights(w, None, torch.zeros(3), ones, 1e-5)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        fuse_conv_bn_weights(w, None, zeros, ones, -1.0)
    fw, fb = fuse_conv_bn_weights(w, None, zeros, ones, 0.0)
    assert torch.allclose(fw, w) and torch.equal(fb, zeros)


class Custom(nn.Module):
    """A pair wired in forward() (not found) next to a Sequential (found)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.body = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Sequential(nn.Conv1d(8, 8, 1), nn.BatchNorm1d(8)))

    def forward(self, x):
        x = self.bn(self.conv(x))
        x = self.body[2](self.body[1](self.body[0](x)))
        n, c, h, w = x.shape
        return self.body[3](x.reshape(n, c, h * w))


def randomize_bn_stats(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def test_fuse_model_counts_and_equals():
    torch.manual_seed(0)
    model = Custom()
    randomize_bn_stats(model)
    model.eval()
    fused, count = fuse_model(model)
    assert count == 2  # the Sequential pairs; the forward()-wired pair is documented as not found
    assert isinstance(fused.body[1], nn.Identity) and isinstance(fused.body[3][1], nn.Identity)
    assert isinstance(fused.bn, nn.BatchNorm2d)
    assert isinstance(model.body[1], nn.BatchNorm2d)  # original untouched
    x = torch.randn(2, 4, 6, 6)
    assert torch.allclose(fused(x), model(x), atol=1e-5)


def test_fuse_model_nested_sequential_and_non_pairs():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8),          # BN not right after conv
        nn.Sequential(nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8), nn.Conv2d(8, 4, 1), nn.BatchNorm2d(4)),
        nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4),
    )
    randomize_bn_stats(model)
    model.eval()
    fused, count = fuse_model(model)
    assert count == 3
    assert isinstance(fused[2], nn.BatchNorm2d)
    x = torch.randn(2, 3, 12, 12)
    assert torch.allclose(fused(x), model(x), atol=1e-4)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in fused.modules()) == 1


def test_fuse_model_errors():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
    with pytest.raises(ValueError, match="eval mode"):
        fuse_model(model)  # fresh modules are in training mode
    with pytest.raises(TypeError, match="expected an nn.Module, got dict"):
        fuse_model({})
    bad = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8, track_running_stats=False)).eval()
    with pytest.raises(ValueError, match="track_running_stats=False"):
        fuse_model(bad)


def test_fuse_model_no_pairs():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval()
    fused, count = fuse_model(model)
    assert count == 0 and fused is not model
