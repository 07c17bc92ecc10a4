"""Tests of tricks_helpers.models (chapters 04, 05)."""

import pytest
import torch
from torch import nn

from tricks_helpers import models


def _same_weights(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def test_mlp_layout_and_shapes():
    net = models.mlp(64, 32, 10, blocks=3)
    assert isinstance(net, nn.Sequential)
    assert len(net) == 2 + 3 + 1
    assert net(torch.randn(5, 64)).shape == (5, 10)
    assert net.training


def test_mlp_options():
    net = models.mlp(4, 8, 2, blocks=2, layers_per_block=2, activation="gelu", batchnorm=True)
    block = net[2]
    assert [type(m) for m in block] == [nn.Linear, nn.BatchNorm1d, nn.GELU] * 2
    inplace = models.mlp(4, 8, 2, blocks=1, inplace=True)
    assert inplace[1].inplace and inplace[2][1].inplace
    assert len(models.mlp(4, 8, 2, blocks=0)) == 3


def test_mlp_keeps_activation_scale_in_deep_stacks():
    net = models.mlp(64, 128, 4, blocks=32, seed=0)
    h = torch.randn(256, 64)
    for layer in list(net)[:-1]:
        h = layer(h)
    # default init would shrink the variance ~6x per Linear+ReLU (to ~1e-25 here)
    assert 0.1 < h.pow(2).mean().item() < 100


def test_mlp_is_deterministic_and_leaves_global_rng_alone():
    state = torch.get_rng_state()
    a = models.mlp(16, 8, 4, blocks=2, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    b = models.mlp(16, 8, 4, blocks=2, seed=3)
    c = models.mlp(16, 8, 4, blocks=2, seed=4)
    assert _same_weights(a, b)
    assert not _same_weights(a, c)


@pytest.mark.parametrize("kwargs, match", [
    (dict(in_features=0, hidden=8, out_features=2), "in_features must be an integer >= 1"),
    (dict(in_features=4, hidden=8, out_features=2, blocks=-1), "blocks must be"),
    (dict(in_features=4, hidden=8, out_features=2, layers_per_block=0), "layers_per_block"),
    (dict(in_features=4, hidden=8, out_features=2, activation="tanh"), "activation must be one of"),
    (dict(in_features=4, hidden=8, out_features=2, activation="gelu", inplace=True), "inplace=True needs"),
    (dict(in_features=4, hidden=8, out_features=2, seed=-1), "seed must be"),
    (dict(in_features=4.0, hidden=8, out_features=2), "in_features must be"),
])
def test_mlp_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.mlp(**kwargs)


def test_small_cnn_shapes_determinism_and_errors():
    net = models.small_cnn(1, 10, width=4, seed=1)
    assert _same_weights(net, models.small_cnn(1, 10, width=4, seed=1))
    assert net(torch.randn(2, 1, 8, 8)).shape == (2, 10)
    assert net(torch.randn(2, 1, 32, 32)).shape == (2, 10)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in models.small_cnn(batchnorm=False))
    assert models.small_cnn(batchnorm=False)[0].bias is not None
    with pytest.raises(ValueError, match="width must be"):
        models.small_cnn(width=0)
    with pytest.raises(ValueError, match="seed must be"):
        models.small_cnn(seed=2**63)
