"""Tests of tricks_helpers.determinism (chapter 02); bitwise comparison: tests/test_bitwise.py."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from tricks_helpers import determinism
from tricks_helpers.determinism import (
    DeterminismSettings,
    assert_reproducible,
    current_settings,
    deterministic,
    enable_determinism,
    preserved_rng,
    restore_rng,
    restore_settings,
    snapshot_rng,
)


@pytest.fixture(autouse=True)
def _restore_global_settings(monkeypatch):
    # On a GPU runner other tests may have initialised CUDA already; these tests are about the
    # settings logic, so they see "CUDA not initialised" unless a test says otherwise.
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    before = current_settings()
    yield
    restore_settings(before)


def _draw():
    return (random.random(), float(np.random.rand()), torch.rand(1).item())


# ----------------------------------------------------------------------------- settings


def test_enable_determinism_sets_everything_and_returns_previous(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = True
    previous = enable_determinism()
    assert previous.deterministic_algorithms is False and previous.cudnn_benchmark is True
    assert previous.cublas_workspace_config is None
    now = current_settings()
    assert now == DeterminismSettings(True, False, True, False, ":4096:8")
    restore_settings(previous)
    assert current_settings() == previous
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


def test_enable_determinism_warn_only_and_existing_cublas_value(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    enable_determinism(warn_only=True)
    assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"  # a deterministic value is kept


def test_deterministic_context_restores_even_on_error(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", "something")
    before = current_settings()
    with pytest.raises(KeyError):
        with deterministic() as previous:
            assert previous == before
            assert torch.are_deterministic_algorithms_enabled()
            assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
            raise KeyError("boom")
    assert current_settings() == before


def test_deterministic_mode_raises_on_a_nondeterministic_op():
    with deterministic():
        with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
            torch.zeros(3).put_(torch.tensor([0, 0]), torch.ones(2))  # raises on CPU too
    # back to normal: the same op runs
    torch.zeros(3).put_(torch.tensor([0, 0]), torch.ones(2))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (
            {"cublas_workspace_config": ":8:8"},
            ValueError,
            "cublas_workspace_config must be one of ':4096:8', ':16:8'; got ':8:8'",
        ),
        ({"cublas_workspace_config": 8}, TypeError, "cublas_workspace_config must be str, got int"),
        ({"warn_only": 1}, TypeError, "warn_only must be True or False, got int 1"),
        ({"warn_only": "no"}, TypeError, "warn_only must be True or False"),
    ],
)
def test_enable_determinism_rejects_bad_arguments_without_changing_anything(kwargs, error, match):
    # package policy (tricks_helpers._checks): wrong type -> TypeError, wrong value -> ValueError
    before = current_settings()
    with pytest.raises(error, match=f"^enable_determinism: {match}"):
        enable_determinism(**kwargs)
    with pytest.raises(error, match=f"^enable_determinism: {match}"):
        with deterministic(**kwargs):
            pass
    assert current_settings() == before


@pytest.mark.parametrize(
    "version, required",
    [
        ("2.4.0", True),
        ("2.9.1+cu128", True),
        ("2.10.0", False),
        ("2.13.0+cpu", False),
        ("3.0", False),
    ],
)
def test_cublas_workspace_required_by_release(version, required):
    assert determinism.cublas_workspace_required(version) is required


def test_cublas_workspace_required_defaults_to_running_torch(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.9.0")
    assert determinism.cublas_workspace_required() is True
    monkeypatch.setattr(torch, "__version__", "2.13.0")
    assert determinism.cublas_workspace_required() is False


def test_cublas_workspace_required_rejects_bad_versions():
    with pytest.raises(ValueError, match="must start with major.minor, got 'nightly'"):
        determinism.cublas_workspace_required("nightly")
    with pytest.raises(TypeError, match="torch_version must be str, got int"):
        determinism.cublas_workspace_required(2)


def test_enable_determinism_does_not_refuse_after_cuda_init_from_2_10(monkeypatch):
    """torch >= 2.10 no longer checks the variable, so refusing would be wrong."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch, "__version__", "2.13.0")
    enable_determinism()
    assert torch.are_deterministic_algorithms_enabled()


def test_enable_determinism_refuses_after_cuda_init(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch, "__version__", "2.9.1")
    before = current_settings()
    with pytest.raises(
        RuntimeError, match=r"torch 2\.9\.1 \(before 2\.10\).*CUDA is already initialised"
    ):
        enable_determinism()
    assert current_settings() == before
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # set in time: fine
    enable_determinism()
    assert torch.are_deterministic_algorithms_enabled()


def test_restore_settings_type_check():
    with pytest.raises(TypeError, match="^restore_settings: settings must be DeterminismSettings"):
        restore_settings({"deterministic_algorithms": True})


# ----------------------------------------------------------------------------- RNG states


def test_snapshot_and_restore_every_rng():
    state = snapshot_rng()
    first = _draw()
    restore_rng(state)
    assert _draw() == first


def test_preserved_rng_restores_after_the_block():
    torch.manual_seed(1)
    np.random.seed(1)
    random.seed(1)
    expected = _draw()
    torch.manual_seed(1)
    np.random.seed(1)
    random.seed(1)
    with preserved_rng():
        _draw()
        _draw()
    assert _draw() == expected


def test_restore_rng_rejects_wrong_input():
    with pytest.raises(TypeError, match="^restore_rng: state must be RNGState, got Tensor"):
        restore_rng(torch.get_rng_state())
    state = snapshot_rng()
    fake = determinism.RNGState(
        state.python, state.numpy, state.torch_cpu, state.cuda + (torch.get_rng_state(),)
    )
    with pytest.raises(ValueError, match="CUDA device state"):
        restore_rng(fake)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_snapshot_includes_cuda():
    state = snapshot_rng()
    assert len(state.cuda) == torch.cuda.device_count()
    a = torch.rand(3, device="cuda")
    restore_rng(state)
    assert torch.equal(torch.rand(3, device="cuda"), a)


# ----------------------------------------------------------------------------- bitwise


def test_assert_reproducible_passes_for_seeded_randomness():
    def fn(n):
        return {"t": torch.randn(n), "np": np.random.rand(n), "py": random.random()}

    out = assert_reproducible(fn, 5)
    assert out["t"].shape == (5,)


def test_assert_reproducible_catches_hidden_state():
    calls = []

    def leaky():
        calls.append(1)
        return torch.ones(2) * len(calls)

    with pytest.raises(AssertionError, match=r"leaky is not reproducible.*result: 2 of 2 elements"):
        assert_reproducible(leaky)


def test_assert_reproducible_rejects_non_callable():
    with pytest.raises(TypeError, match="^assert_reproducible: fn must be callable, got int"):
        assert_reproducible(3)


def test_import_changes_no_global_state():
    code = (
        "import os, torch\n"
        "def flags(): return (torch.are_deterministic_algorithms_enabled(), "
        "torch.is_deterministic_algorithms_warn_only_enabled(), "
        "torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark, "
        "os.environ.get('CUBLAS_WORKSPACE_CONFIG'))\n"
        "before = flags()\n"
        "import tricks_helpers.determinism\n"
        "assert flags() == before, (flags(), before)\n"
        "print('ok')"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
