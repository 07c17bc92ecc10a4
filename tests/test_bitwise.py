"""Tests of tricks_helpers.bitwise: bit-for-bit comparison that says where results differ (02)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from tricks_helpers.bitwise import assert_bitwise_equal, first_difference


def test_zero_signs_and_nan_payloads_are_bits():
    assert first_difference(0.0, -0.0) == "result: float 0.0 vs -0.0"
    assert first_difference(torch.tensor([0.0]), torch.tensor([-0.0])).startswith(
        "result: 1 of 1 elements differ bitwise, first at index (0,)"
    )
    quiet = np.array([np.nan], dtype=np.float32)
    other = quiet.view(np.uint32) | np.uint32(1)  # another NaN payload
    assert first_difference(quiet, other.view(np.float32)).startswith("result: 1 of 1 elements")
    assert first_difference(np.float32(np.nan), np.float32(np.nan)) is None


def test_containers_name_the_path_to_the_first_difference():
    a = {"loss": 0.25, "grads": [torch.ones(2), (1, "x")]}
    assert first_difference(a, {"loss": 0.25, "grads": [torch.ones(2), (1, "x")]}) is None
    b = {"loss": 0.25, "grads": [torch.ones(2), (1, "y")]}
    assert first_difference(a, b, "state") == "state['grads'][1][1]: 'x' vs 'y'"
    assert first_difference([1, 2], [1, 2, 3]) == "result: length 2 vs 3"
    assert first_difference({"a": 1}, {"b": 1}) == "result: keys ['a'] vs ['b']"
    assert first_difference(1, 1.0) == "result: type int vs float"
    assert first_difference(np.zeros(2), np.zeros(2, np.float32)) == (
        "result: dtype float64 vs float32"
    )
    assert first_difference(torch.zeros(2), torch.zeros(3)) == "result: shape (2,) vs (3,)"


def test_an_object_whose_equality_is_not_a_truth_value_is_refused():
    class Elementwise:
        def __eq__(self, other):
            raise ValueError("ambiguous")

    with pytest.raises(TypeError, match="cannot compare Elementwise objects at result"):
        first_difference(Elementwise(), Elementwise())


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
