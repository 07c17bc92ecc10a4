"""Tests of tricks_helpers.fusion (chapter 06)."""

import copy
import random
import warnings

import pytest
import torch
from torch import nn
from torch.ao.quantization import fuse_modules
from torch.fx.experimental.optimization import fuse as fx_fuse
from torch.nn.utils.fusion import fuse_conv_bn_eval

from tricks_helpers.fusion import batchnorm_elements, fuse_conv_bn, fuse_conv_bn_weights, fuse_model
from tricks_helpers.resnet import resnet18

CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
SPATIAL = {1: 17, 2: 9, 3: 6}


def make_pair(
    dim,
    cin=4,
    cout=6,
    k=3,
    stride=1,
    padding=1,
    dilation=1,
    groups=1,
    bias=True,
    affine=True,
    padding_mode="zeros",
    seed=0,
):
    """A conv + BN in eval mode with non-trivial statistics and affine parameters."""
    g = torch.Generator().manual_seed(seed)
    conv = CONV[dim](
        cin,
        cout,
        k,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
        bias=bias,
        padding_mode=padding_mode,
    )
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
        conv, bn = make_pair(
            dim,
            cin=cin,
            cout=cout,
            k=k,
            stride=rng.choice([1, 2]),
            padding=padding,
            dilation=rng.choice([1, 2]),
            groups=groups,
            bias=rng.random() < 0.5,
            affine=rng.random() < 0.5,
            padding_mode=padding_mode,
            seed=case,
        )
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
    before = {
        k: v.clone()
        for k, v in list(conv.state_dict().items())
        + [("bn." + k, v) for k, v in bn.state_dict().items()]
    }
    fused = fuse_conv_bn(conv, bn)
    after = {
        k: v
        for k, v in list(conv.state_dict().items())
        + [("bn." + k, v) for k, v in bn.state_dict().items()]
    }
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
    with pytest.raises(ValueError, match="eps must be a finite number"):
        fuse_conv_bn_weights(w, None, zeros, ones, float("nan"))
    with pytest.raises(TypeError, match="eps must be a number, got str"):
        fuse_conv_bn_weights(w, None, zeros, ones, "1e-5")
    with pytest.raises(TypeError, match="weight must be Tensor, got list"):
        fuse_conv_bn_weights([1.0], None, zeros, ones, 1e-5)
    with pytest.raises(TypeError, match="running_var must be a Tensor, got NoneType"):
        fuse_conv_bn_weights(w, None, zeros, None, 1e-5)
    fw, fb = fuse_conv_bn_weights(w, None, zeros, ones, 0.0)
    assert torch.allclose(fw, w) and torch.equal(fb, zeros)


def test_string_padding_and_requires_grad_follow_the_conv():
    conv, bn = make_pair(2, padding="same")
    conv.weight.requires_grad_(False)
    fused = check_against_references(conv, bn, make_input(2, 4))
    assert fused.padding == "same" and not fused.weight.requires_grad
    assert not fused.bias.requires_grad


# --- hooks (issue 12: a conv forward hook copied onto the fused conv ran after BatchNorm)


def test_conv_forward_hook_is_refused_not_copied():
    conv, bn = make_pair(2)
    seen = []
    conv.register_forward_hook(lambda m, i, o: seen.append(o))
    with pytest.raises(ValueError, match=r"the conv has hooks \(forward hooks\).*drop_hooks=True"):
        fuse_conv_bn(conv, bn)
    fused = fuse_conv_bn(conv, bn, drop_hooks=True)
    assert not fused._forward_hooks and not fused._forward_pre_hooks
    fused(make_input(2, 4))
    assert seen == []  # the dropped hook never sees the fused (post-BatchNorm) output
    assert len(conv._forward_hooks) == 1  # the input conv keeps its hook


def test_bn_hooks_and_pre_hooks_are_refused():
    conv, bn = make_pair(2)
    bn.register_forward_pre_hook(lambda m, i: None)
    with pytest.raises(ValueError, match=r"the BatchNorm has hooks \(forward pre hooks\)"):
        fuse_conv_bn(conv, bn)
    with pytest.raises(TypeError, match="drop_hooks must be True or False"):
        fuse_conv_bn(conv, bn, drop_hooks=1)


# --- fuse_model: torch.fx finds pairs wired in forward()


class Custom(nn.Module):
    """A pair wired in forward(), a Sequential pair, a Conv1d pair, and a lone BatchNorm."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.body = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.conv1d = nn.Conv1d(8, 8, 1)
        self.bn1d = nn.BatchNorm1d(8)
        self.lone = nn.BatchNorm1d(8)

    def forward(self, x):
        x = self.body(self.bn(self.conv(x)))
        return self.lone(torch.relu(self.bn1d(self.conv1d(x.flatten(2)))))


def randomize_bn_stats(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def bn_count(model):
    return sum(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def test_fuse_model_finds_pairs_wired_in_forward():
    torch.manual_seed(0)
    model = Custom()
    randomize_bn_stats(model)
    model.eval()
    fused, count = fuse_model(model)
    assert count == 3
    assert isinstance(fused, torch.fx.GraphModule) and not fused.training
    assert bn_count(fused) == 1 and isinstance(fused.get_submodule("lone"), nn.BatchNorm1d)
    assert isinstance(model.bn, nn.BatchNorm2d)  # original untouched
    x = torch.randn(2, 4, 6, 6)
    with torch.no_grad():
        assert torch.allclose(fused(x), model(x), atol=1e-5)


def test_fuse_model_resnet18_matches_torch_fx_fuse():
    torch.manual_seed(0)
    model = resnet18(10)
    randomize_bn_stats(model)
    model.eval()
    fused, count = fuse_model(model)
    assert count == 20 and bn_count(fused) == 0 and bn_count(model) == 20
    reference = fx_fuse(model)
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        out, ref, orig = fused(x), reference(x), model(x)
    scale = orig.abs().max().item()
    assert (out - orig).abs().max().item() <= 1e-4 * scale
    assert (out - ref).abs().max().item() <= 1e-4 * scale
    assert fused.get_submodule("layer2.0.downsample.0").bias is not None


class SharedUse(nn.Module):
    """conv output used twice (by BN and by the residual) and a conv module called twice."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4)
        self.twice, self.bn2 = nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        z = self.bn(y) + y
        return self.bn2(self.twice(z)) + self.twice(x)


def test_fuse_model_leaves_shared_outputs_and_modules_alone():
    model = SharedUse()
    randomize_bn_stats(model)
    model.eval()
    fused, count = fuse_model(model)
    assert count == 0 and bn_count(fused) == 2
    x = torch.randn(2, 4, 5, 5)
    with torch.no_grad():
        assert torch.equal(fused(x), model(x))


class Untraceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)

    def forward(self, x):
        if x.sum() > 0:  # control flow on a tensor value: torch.fx cannot trace it
            x = -x
        return self.bn(self.conv(x))


def test_fuse_model_refuses_what_fx_cannot_trace():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).eval()
    with warnings.catch_warnings():  # torch.jit.script is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(model)
    with pytest.raises(TypeError, match="fuse_model: got a scripted module"):
        fuse_model(scripted)
    with pytest.raises(TypeError, match="torch.compile'd module"):
        fuse_model(torch.compile(model))
    with pytest.raises(ValueError, match=r"torch.fx cannot trace Untraceable.forward \(TraceError"):
        fuse_model(Untraceable().eval())


def test_fuse_model_hooks():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8)),
    ).eval()
    seen = []
    model[2].register_forward_hook(lambda m, i, o: seen.append(o.shape))  # a leaf: kept
    fused, count = fuse_model(model)
    assert count == 2
    fused(torch.randn(1, 3, 6, 6))
    assert seen == [(1, 8, 4, 4)]
    model[3].register_forward_hook(lambda m, i, o: None)  # a container: inlined by fx
    with pytest.raises(ValueError, match=r"inlines the forward of 3, so its hooks would be lost"):
        fuse_model(model)
    model[0].register_forward_hook(lambda m, i, o: None)  # a conv of a pair
    with pytest.raises(ValueError, match="the conv has hooks"):
        fuse_model(model)
    fused, count = fuse_model(model, drop_hooks=True)
    assert count == 2


def test_fuse_model_errors():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
    with pytest.raises(ValueError, match="eval mode"):
        fuse_model(model)  # fresh modules are in training mode
    with pytest.raises(TypeError, match="fuse_model: model must be Module, got dict"):
        fuse_model({})
    with pytest.raises(TypeError, match="drop_hooks must be True or False"):
        fuse_model(model.eval(), drop_hooks="no")
    bad = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8, track_running_stats=False)).eval()
    with pytest.raises(ValueError, match="track_running_stats=False"):
        fuse_model(bad)


def test_fuse_model_no_pairs():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval()
    fused, count = fuse_model(model)
    assert count == 0 and fused is not model
    x = torch.randn(2, 3)
    assert torch.equal(fused(x), model(x))


def test_batchnorm_elements():
    model = Custom().eval()
    x = torch.randn(2, 4, 6, 6)
    # bn: 2*4*36, body BN: 2*8*36, bn1d and lone: 2*8*36 each
    assert batchnorm_elements(model, x) == 2 * 36 * (4 + 8 + 8 + 8)
    assert batchnorm_elements(nn.Sequential(nn.Linear(3, 3)).eval(), torch.randn(5, 3)) == 0
    resnet = resnet18(10).eval()
    before = copy.deepcopy(resnet.state_dict())
    # stem 64x16x16, layer1 4x 64x8x8, layer2 (4+1) x 128x4x4, layer3 5x 256x2x2, layer4 5x 512
    expected = 64 * 256 + 4 * 64 * 64 + 5 * 128 * 16 + 5 * 256 * 4 + 5 * 512
    assert batchnorm_elements(resnet, torch.randn(1, 3, 32, 32)) == expected
    assert all(torch.equal(v, before[k]) for k, v in resnet.state_dict().items())
    with pytest.raises(ValueError, match="batchnorm_elements: model must be in eval mode"):
        batchnorm_elements(resnet.train(), torch.randn(1, 3, 32, 32))
    with pytest.raises(ValueError, match="batchnorm_elements: torch.fx cannot trace Untraceable"):
        batchnorm_elements(Untraceable().eval(), torch.randn(1, 3, 8, 8))
    with pytest.raises(TypeError, match="batchnorm_elements: model must be Module, got str"):
        batchnorm_elements("resnet", torch.randn(1))
