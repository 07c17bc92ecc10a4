"""Tests of tricks_helpers.training: digits, mlp, run_steps, accuracy."""

import pytest
import torch
from torch import nn

from tricks_helpers import training


def _same_weights(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def _data(n=10):
    return torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n)


# --- digits -----------------------------------------------------------------------------------


def test_digits_split_is_stratified_deterministic_and_scaled():
    d = training.digits(test_fraction=0.3, seed=0)
    assert len(d.X_train) + len(d.X_test) == 1797 and d.X_train.shape[1] == 64
    assert d.X_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    assert 0 <= d.X_train.min() and d.X_train.max() <= 1
    assert torch.bincount(d.y_test).min() >= 50  # every class held out
    again = training.digits(test_fraction=0.3, seed=0)
    assert torch.equal(d.X_test, again.X_test)
    assert not torch.equal(d.y_test, training.digits(test_fraction=0.3, seed=1).y_test)


def test_digits_images_and_no_test_split():
    d = training.digits(test_fraction=0, images=True)
    assert d.X_train.shape == (1797, 1, 8, 8) and len(d.X_test) == 0


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(test_fraction=1.0), ValueError),
        (dict(test_fraction=-0.1), ValueError),
        (dict(test_fraction="0.3"), TypeError),
        (dict(images="yes"), TypeError),
        (dict(seed=-1), ValueError),
    ],
)
def test_digits_bad_arguments(kwargs, error):
    with pytest.raises(error):
        training.digits(**kwargs)


# --- mlp --------------------------------------------------------------------------------------


def test_mlp_layout_and_shapes():
    net = training.mlp(64, 32, 10, blocks=3)
    assert isinstance(net, nn.Sequential) and len(net) == 2 + 3 + 1
    assert net(torch.randn(5, 64)).shape == (5, 10)
    assert net.training


def test_mlp_options():
    net = training.mlp(4, 8, 2, blocks=2, layers_per_block=2, activation="gelu", batchnorm=True)
    assert [type(m) for m in net[2]] == [nn.Linear, nn.BatchNorm1d, nn.GELU] * 2
    inplace = training.mlp(4, 8, 2, blocks=1, inplace=True)
    assert inplace[1].inplace and inplace[2][1].inplace
    assert len(training.mlp(4, 8, 2, blocks=0)) == 3


def test_mlp_keeps_activation_scale_in_deep_stacks():
    net = training.mlp(64, 128, 4, blocks=32, seed=0)
    h = torch.randn(256, 64)
    for layer in list(net)[:-1]:
        h = layer(h)
    # default init would shrink the variance ~6x per Linear+ReLU (to ~1e-25 here)
    assert 0.1 < h.pow(2).mean().item() < 100


def test_mlp_is_deterministic_and_leaves_global_rng_alone():
    state = torch.get_rng_state()
    a = training.mlp(16, 8, 4, blocks=2, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    assert _same_weights(a, training.mlp(16, 8, 4, blocks=2, seed=3))
    assert not _same_weights(a, training.mlp(16, 8, 4, blocks=2, seed=4))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(in_features=0), ValueError, "in_features must be an integer >= 1"),
        (dict(blocks=-1), ValueError, "blocks must be"),
        (dict(layers_per_block=0), ValueError, "layers_per_block"),
        (dict(activation="tanh"), ValueError, "activation must be one of"),
        (dict(activation="gelu", inplace=True), ValueError, "inplace=True needs"),
        (dict(seed=-1), ValueError, "seed must be"),
        (dict(in_features=4.0), TypeError, "in_features must be an integer"),
        # a truthy string must not silently add BatchNorm (it did before)
        (dict(batchnorm="no"), TypeError, "batchnorm must be True or False"),
        (dict(inplace=1), TypeError, "inplace must be True or False"),
    ],
)
def test_mlp_bad_arguments(kwargs, error, match):
    args = dict(in_features=4, hidden=8, out_features=2)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        training.mlp(**args)


# --- run_steps --------------------------------------------------------------------------------


def test_run_steps_same_seed_same_batches_and_epochs_cover_all_samples():
    X, y = _data(10)
    seen_a, seen_b, seen_c = [], [], []
    la = training.run_steps(
        lambda xb, yb: seen_a.append(yb.tolist()) or 1.0, X, y, steps=5, batch_size=5, seed=1
    )
    training.run_steps(
        lambda xb, yb: seen_b.append(yb.tolist()) or 1.0, X, y, steps=5, batch_size=5, seed=1
    )
    assert la == [1.0] * 5 and seen_a == seen_b
    assert sorted(seen_a[0] + seen_a[1]) == list(range(10))  # one epoch = one permutation
    training.run_steps(
        lambda xb, yb: seen_c.append(yb.tolist()) or 1.0, X, y, steps=5, batch_size=5, seed=2
    )
    assert seen_c != seen_a


def test_run_steps_leaves_global_rng_alone_and_returns_floats():
    X, y = _data()
    state = torch.get_rng_state()
    out = training.run_steps(lambda xb, yb: xb.sum(), X, y, steps=3, batch_size=2)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(isinstance(v, float) for v in out)


def test_run_steps_errors():
    X, y = _data()
    step = lambda a, b: 0.0
    with pytest.raises(TypeError, match="step must be callable"):
        training.run_steps(None, X, y, steps=1, batch_size=1)
    with pytest.raises(TypeError, match="X must be Tensor"):
        training.run_steps(step, [1], y, steps=1, batch_size=1)
    with pytest.raises(ValueError, match="same non-zero length"):
        training.run_steps(step, X[:3], y, steps=1, batch_size=1)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        training.run_steps(step, X, y, steps=0, batch_size=1)
    with pytest.raises(ValueError, match=r"batch_size must be an integer in \[1, 10\]"):
        training.run_steps(step, X, y, steps=1, batch_size=11)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        training.run_steps(step, X, y, steps=1, batch_size=2.0)
    with pytest.raises(ValueError, match="non-finite loss nan at step 0"):
        training.run_steps(lambda a, b: float("nan"), X, y, steps=2, batch_size=2)


# --- accuracy ---------------------------------------------------------------------------------


def test_accuracy_counts_correct_and_batches():
    X, y = torch.eye(4), torch.tensor([0, 1, 2, 0])
    assert training.accuracy(nn.Identity(), X, y) == 0.75
    assert training.accuracy(nn.Identity(), X, y, batch_size=3) == 0.75
    assert training.accuracy(lambda x: x, X, y, batch_size=1) == 0.75


def test_accuracy_evaluates_in_eval_mode_and_restores_modes():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.9), nn.BatchNorm1d(4))
    net.train()
    net[2].eval()  # a mixed state must come back as it was
    X, y = torch.randn(64, 4), torch.randint(0, 4, (64,))
    a1 = training.accuracy(net, X, y)
    a2 = training.accuracy(net, X, y)
    assert a1 == a2  # deterministic: Dropout was off
    assert net.training and net[1].training and not net[2].training
    assert net[2].num_batches_tracked.item() == 0  # no running-stat update happened

    class Boom(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    boom = Boom().train()
    with pytest.raises(RuntimeError, match="boom"):
        training.accuracy(boom, X, y)
    assert boom.training


def test_accuracy_errors():
    X, y = torch.eye(4), torch.arange(4)
    with pytest.raises(ValueError, match="same length"):
        training.accuracy(nn.Identity(), X, y[:3])
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        training.accuracy(nn.Identity(), X, y, batch_size=0)
    with pytest.raises(ValueError, match="logits"):
        training.accuracy(lambda x: x.sum(1), X, y)
    with pytest.raises(ValueError, match="1-D class labels"):
        training.accuracy(nn.Identity(), X, y[:, None])
    with pytest.raises(TypeError, match="must be callable"):
        training.accuracy(3, X, y)
    with pytest.raises(TypeError, match="X must be Tensor"):
        training.accuracy(nn.Identity(), [[1.0]], y)


def test_run_steps_takes_a_loss_that_requires_grad_without_warning(recwarn):
    X, y = _data()
    w = torch.ones(1, requires_grad=True)
    out = training.run_steps(lambda xb, yb: (xb * w).sum(), X, y, steps=2, batch_size=2)
    assert all(isinstance(v, float) for v in out)
    assert not [r for r in recwarn if "requires_grad" in str(r.message)]


@pytest.mark.parametrize("rows", [slice(None), slice(0, 1)], ids=["all rows", "one row"])
def test_accuracy_refuses_nan_logits(rows):
    X = torch.zeros(4, 3)
    y = torch.zeros(4, dtype=torch.long)

    def model(x):
        out = torch.zeros(len(x), 5)
        out[rows] = float("nan")
        return out

    with pytest.raises(ValueError, match="NaN logits in [14] of 4 rows"):
        training.accuracy(model, X, y)  # argmax of NaN is 0: all-NaN once scored 1.0
