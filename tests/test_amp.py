"""Tests of tricks_helpers.amp (chapter 04)."""

import pytest
import torch

from tricks_helpers import amp, env


def test_native_bf16_follows_env_card():
    assert amp.native_bf16("cpu") == env.bf16_support("cpu").startswith("native")
    with pytest.raises(ValueError, match="expected a 'cpu' or 'cuda' device"):
        amp.native_bf16("meta")


def test_autocast_dtypes():
    assert amp.autocast_dtypes("cpu") == [torch.bfloat16]
    with pytest.raises(ValueError, match="expected a 'cpu' or 'cuda' device"):
        amp.autocast_dtypes("meta")
    if torch.cuda.is_available():
        assert amp.autocast_dtypes("cuda")[0] == torch.float16
    else:
        with pytest.raises(ValueError, match="CUDA requested"):
            amp.autocast_dtypes("cuda")


def _data(n=10):
    return torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n)


def test_run_steps_same_seed_same_batches_and_epochs_cover_all_samples():
    X, y = _data(10)
    seen_a, seen_b = [], []
    la = amp.run_steps(lambda xb, yb: seen_a.append(yb.tolist()) or 1.0, X, y, steps=5, batch_size=5, seed=1)
    amp.run_steps(lambda xb, yb: seen_b.append(yb.tolist()) or 1.0, X, y, steps=5, batch_size=5, seed=1)
    assert la == [1.0] * 5
    assert seen_a == seen_b
    assert sorted(seen_a[0] + seen_a[1]) == list(range(10))  # one epoch = one permutation
    assert all(len(b) == 5 for b in seen_a)
    seen_c = []
    amp.run_steps(lambda xb, yb: seen_c.append(yb.tolist()) or 1.0, X, y, steps=5, batch_size=5, seed=2)
    assert seen_c != seen_a


def test_run_steps_leaves_global_rng_alone_and_returns_floats():
    X, y = _data()
    state = torch.get_rng_state()
    out = amp.run_steps(lambda xb, yb: xb.sum(), X, y, steps=3, batch_size=2)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(isinstance(v, float) for v in out)


def test_run_steps_errors():
    X, y = _data()
    with pytest.raises(TypeError, match="step must be callable"):
        amp.run_steps(None, X, y, steps=1, batch_size=1)
    with pytest.raises(TypeError, match="must be tensors"):
        amp.run_steps(lambda a, b: 0.0, [1], y, steps=1, batch_size=1)
    with pytest.raises(ValueError, match="same non-zero length"):
        amp.run_steps(lambda a, b: 0.0, X[:3], y, steps=1, batch_size=1)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        amp.run_steps(lambda a, b: 0.0, X, y, steps=0, batch_size=1)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1 and <= 10"):
        amp.run_steps(lambda a, b: 0.0, X, y, steps=1, batch_size=11)
    with pytest.raises(ValueError, match="non-finite loss nan at step 0"):
        amp.run_steps(lambda a, b: float("nan"), X, y, steps=2, batch_size=2)
