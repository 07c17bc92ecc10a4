"""Tests of tricks_helpers.determinism (and .bitwise) (chapter 02)."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from tricks_helpers import determinism
from tricks_helpers.bitwise import assert_bitwise_equal, first_difference
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


def test_first_difference_equal_things():
    x = {"w": torch.arange(6.0).reshape(2, 3), "a": np.arange(3), "l": [1.5, "s", None, (2,)]}
    y = {"w": torch.arange(6.0).reshape(2, 3), "a": np.arange(3), "l": [1.5, "s", None, (2,)]}
    assert first_difference(x, y) is None
    assert first_difference(torch.tensor(float("nan")), torch.tensor(float("nan"))) is None
    assert first_difference(math.nan, math.nan) is None
    assert first_difference(torch.empty(0), torch.empty(0)) is None


def test_first_difference_locates_the_difference():
    a = {"loss": 0.25, "w": [torch.zeros(2, 3)]}
    b = {"loss": 0.25, "w": [torch.zeros(2, 3)]}
    b["w"][0][1, 2] = 1e-7
    found = first_difference(a, b)
    assert found.startswith("result['w'][0]: 1 of 6 elements differ bitwise, first at index (1, 2)")
    assert "max |diff| 1e-07" in found


@pytest.mark.parametrize(
    "a, b, match",
    [
        (0.0, -0.0, "float 0.0 vs -0.0"),
        (1.0, 1, "type float vs int"),
        ([1, 2], [1, 2, 3], "length 2 vs 3"),
        ({"a": 1}, {"b": 1}, "keys"),
        (torch.zeros(2), torch.zeros(2, dtype=torch.float64), "dtype"),
        (torch.zeros(2), torch.zeros(3), "shape"),
        (
            np.zeros(2),
            np.array([0.0, 1.0]),
            r"first at index \(1,\): np.float64\(0.0\) vs np.float64\(1.0\)",
        ),
        (np.float32(1), np.float32(2), "1 of 1 elements"),
        (np.zeros(2), np.zeros(2, np.float32), "dtype float64 vs float32"),
        (torch.tensor([True]), torch.tensor([False]), "1 of 1 elements differ"),
        ("a", "b", "'a' vs 'b'"),
    ],
)
def test_assert_bitwise_equal_messages(a, b, match):
    with pytest.raises(AssertionError, match=match):
        assert_bitwise_equal(a, b)


def _nested(layout):
    with warnings.catch_warnings():  # the strided layout of nested tensors is a prototype
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], layout=layout)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: torch.zeros(2).to_sparse(), "only dense"),
        (lambda: _nested(torch.strided), r"only dense.*nested"),
        (lambda: _nested(torch.jagged), r"only dense.*got layout torch.jagged"),
        (lambda: torch.empty(3, device="meta"), "meta tensors hold no data"),
    ],
)
def test_first_difference_refuses_tensors_without_dense_data(make, match):
    with pytest.raises(TypeError, match=f"^first_difference: {match}"):
        first_difference(make(), make())


def _quantize(values, scale=0.1, zero_point=0, dtype=torch.qint8):
    with warnings.catch_warnings():  # quantized tensor creation is deprecated in torch 2.13
        warnings.simplefilter("ignore")
        return torch.quantize_per_tensor(torch.tensor(values), scale, zero_point, dtype)


def _quantize_channels(scales, zero_points=(0, 0)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_channel(
            torch.ones(2, 2), torch.tensor(scales), torch.tensor(zero_points), 0, torch.qint8
        )


def test_quantized_tensors_compare_parameters_and_integers():
    # issue 12: assert_bitwise_equal(q, q) on a quantized tensor crashed the process
    q = _quantize([0.1, 0.5])
    assert_bitwise_equal(q, q)
    assert_bitwise_equal(q, _quantize([0.1, 0.5]))
    assert_bitwise_equal(_quantize_channels([0.1, 0.2]), _quantize_channels([0.1, 0.2]))
    cases = [
        (
            _quantize([0.1, 0.6]),
            r"int_repr: 1 of 2 elements differ bitwise, first at index "
            r"\(1,\): 5 vs 6",
        ),
        (_quantize([0.1, 0.5], scale=0.2), "scale 0.1 vs 0.2"),
        (_quantize([0.1, 0.5], zero_point=1), "zero_point 0 vs 1"),
        (_quantize([0.1, 0.5], dtype=torch.quint8), "dtype torch.qint8 vs torch.quint8"),
    ]
    for other, match in cases:
        with pytest.raises(AssertionError, match=f"not bitwise equal: result: {match}"):
            assert_bitwise_equal(q, other)
    with pytest.raises(AssertionError, match=r"scales: 1 of 2 elements differ"):
        assert_bitwise_equal(_quantize_channels([0.1, 0.2]), _quantize_channels([0.1, 0.3]))
    with pytest.raises(AssertionError, match=r"zero_points: 1 of 2 elements differ"):
        assert_bitwise_equal(_quantize_channels([0.1, 0.2]), _quantize_channels([0.1, 0.2], (0, 1)))
    with pytest.raises(
        AssertionError,
        match=r"qscheme torch.per_tensor_affine vs "
        r"torch.per_channel_affine",
    ):
        assert_bitwise_equal(_quantize([[1.0, 1.0], [1.0, 1.0]]), _quantize_channels([0.1, 0.2]))


def test_conjugate_and_negative_views_compare_their_values():
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert_bitwise_equal(z.conj(), z.conj().resolve_conj())
    assert_bitwise_equal(z.conj().imag, torch.tensor([-2.0, 1.0]))
    with pytest.raises(AssertionError, match="1 of 2 elements"):
        assert_bitwise_equal(z.conj(), torch.tensor([1 - 2j, 3 - 1j]))


def test_object_arrays_compare_element_by_element():
    a = np.array([[None, np.zeros(2)]], dtype=object)
    assert first_difference(a, np.array([[None, np.zeros(2)]], dtype=object)) is None
    found = first_difference(a, np.array([[None, np.ones(2)]], dtype=object))
    assert found.startswith("result[0, 1]: 2 of 2 elements differ bitwise")


def test_bitwise_checks_reject_wrong_types():
    with pytest.raises(TypeError, match="^first_difference: path must be str, got int"):
        first_difference(1, 1, 3)
    with pytest.raises(TypeError, match="^assert_bitwise_equal: name must be str"):
        assert_bitwise_equal(1, 1, name=None)


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
