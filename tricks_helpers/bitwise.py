"""Bit-for-bit comparison of results, saying where they differ (chapter 02).

:func:`first_difference` walks two results (tensors, numpy arrays, floats, nested lists,
tuples and dicts) and describes the first place where they differ, or returns ``None``;
:func:`assert_bitwise_equal` raises ``AssertionError`` with that description. "Equal" means
equal bits: ``-0.0`` differs from ``0.0``, and ``nan`` equals ``nan``. Used by
:func:`tricks_helpers.determinism.assert_reproducible`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from tricks_helpers._checks import check_type

__all__ = ["first_difference", "assert_bitwise_equal"]


def _bits(t: torch.Tensor) -> torch.Tensor:
    flat = t.detach().resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        return flat.to(torch.uint8).reshape(-1, 1)
    if not flat.numel():
        return flat.view(torch.uint8)
    return flat.view(torch.uint8).reshape(flat.numel(), -1)


def _float_bits_differ(x: float, y: float) -> bool:
    return np.float64(x).tobytes() != np.float64(y).tobytes()


def _quantized_difference(a: torch.Tensor, b: torch.Tensor) -> str | None:
    """Quantized tensors: same scheme and parameters, then the integers bit for bit.

    Their storage cannot be viewed as bytes (``view(torch.uint8)`` crashes the process on
    torch 2.13), so the integer representation (``int_repr()``) is compared instead.
    """
    scheme = a.qscheme()
    if scheme != b.qscheme():
        return f"qscheme {scheme} vs {b.qscheme()}"
    if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        if _float_bits_differ(a.q_scale(), b.q_scale()):
            return f"scale {a.q_scale()!r} vs {b.q_scale()!r}"
        if a.q_zero_point() != b.q_zero_point():
            return f"zero_point {a.q_zero_point()} vs {b.q_zero_point()}"
    else:  # per-channel schemes
        if a.q_per_channel_axis() != b.q_per_channel_axis():
            return f"axis {a.q_per_channel_axis()} vs {b.q_per_channel_axis()}"
        for name, x, y in (
            ("scales", a.q_per_channel_scales(), b.q_per_channel_scales()),
            ("zero_points", a.q_per_channel_zero_points(), b.q_per_channel_zero_points()),
        ):
            detail = _tensor_difference(x, y)
            if detail is not None:
                return f"{name}: {detail}"
    detail = _tensor_difference(a.int_repr(), b.int_repr())
    return None if detail is None else f"int_repr: {detail}"


def _item(t: torch.Tensor, i: int) -> Any:
    try:
        return t.detach().cpu().reshape(-1)[i].item()
    except (RuntimeError, TypeError):  # dtypes without a Python scalar (e.g. float4_e2m1fn_x2)
        return "<no scalar>"


def _tensor_difference(a: torch.Tensor, b: torch.Tensor) -> str | None:
    for t in (a, b):
        if t.layout != torch.strided or t.is_nested or t.is_mkldnn:
            raise TypeError(
                "first_difference: only dense (strided) tensors are supported, "
                f"got layout {t.layout}{' (nested)' if t.is_nested else ''}"
            )
        if t.is_meta:
            raise TypeError(
                "first_difference: meta tensors hold no data to compare; "
                "compare their shape and dtype instead"
            )
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.device != b.device:
        return f"device {a.device} vs {b.device}"
    if a.is_quantized:  # b too: same dtype
        return _quantized_difference(a, b)
    if a.numel() == 0:
        return None
    differ = (_bits(a) != _bits(b)).any(dim=1)
    n = int(differ.sum())
    if n == 0:
        return None
    first = int(differ.nonzero()[0, 0])
    index = tuple(int(i) for i in np.unravel_index(first, tuple(a.shape))) if a.dim() else ()
    av, bv = _item(a, first), _item(b, first)
    detail = f"{n} of {a.numel()} elements differ bitwise, first at index {index}: {av!r} vs {bv!r}"
    if a.is_floating_point():
        diff = (a.detach().cpu().double() - b.detach().cpu().double()).abs()
        detail += f" (max |diff| {float(diff.nan_to_num(nan=float('inf')).max()):.3g})"
    return detail


def _array_difference(a: np.ndarray, b: np.ndarray) -> str | None:
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if a.dtype.hasobject:  # structured records with object fields (object arrays recurse)
        try:
            same = a.tolist() == b.tolist()
        except Exception as exc:
            raise TypeError(
                f"first_difference: cannot compare records with object fields: {exc}"
            ) from exc
        return None if same else "records with object fields differ"
    if a.size == 0:
        return None
    bits_a = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1)
    bits_b = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(b.size, -1)
    differ = (bits_a != bits_b).any(axis=1)
    n = int(differ.sum())
    if n == 0:
        return None
    first = int(np.flatnonzero(differ)[0])
    index = tuple(int(i) for i in np.unravel_index(first, a.shape))
    av, bv = a.reshape(-1)[first], b.reshape(-1)[first]
    detail = f"{n} of {a.size} elements differ bitwise, first at index {index}: {av!r} vs {bv!r}"
    if a.dtype.kind in "fc":
        with np.errstate(invalid="ignore", over="ignore"):
            wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            diff = np.nan_to_num(np.abs(wide - b), nan=np.inf)
        detail += f" (max |diff| {float(diff.max()):.3g})"
    return detail


def first_difference(a: Any, b: Any, path: str = "result") -> str | None:
    """Describe the first bitwise difference between two results, or return ``None``.

    Tensors and numpy arrays compare dtype, shape (and device) and every bit, so ``nan``
    equals ``nan`` and ``0.0`` differs from ``-0.0``; conjugate and negative views compare
    their values. Quantized tensors compare their scheme, scale(s) and zero point(s), then
    their integers (``int_repr()``). Floats compare their 64 bits; lists, tuples, dicts and
    numpy object arrays compare element by element; other objects compare with ``==``.

    Args:
        a, b: the two results.
        path: the name of the results in the message.

    Returns:
        ``None`` when equal, else ``"<path>: <what differs>"``, e.g.
        ``"result['loss']: float 0.25 vs 0.2500000001"``.

    Raises:
        TypeError: on a non-string ``path``; on tensors without dense data to compare
            (sparse, nested, mkldnn, meta); on objects whose ``==`` does not give a truth value.
    """
    check_type("first_difference", "path", path, str)
    if type(a) is not type(b) and not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return f"{path}: type {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        detail = _tensor_difference(a, b)
        return None if detail is None else f"{path}: {detail}"
    if isinstance(a, np.ndarray) and a.dtype.hasobject and b.dtype.hasobject:
        if a.shape != b.shape:
            return f"{path}: shape {a.shape} vs {b.shape}"
        for i, (x, y) in enumerate(zip(a.reshape(-1), b.reshape(-1))):
            index = ", ".join(str(int(k)) for k in np.unravel_index(i, a.shape))
            found = first_difference(x, y, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(a, (np.ndarray, np.generic)):
        detail = _array_difference(np.asarray(a), np.asarray(b))
        return None if detail is None else f"{path}: {detail}"
    if isinstance(a, float):
        same = np.float64(a).tobytes() == np.float64(b).tobytes()
        return None if same else f"{path}: float {a!r} vs {b!r}"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, Mapping):
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys {list(a.keys())!r} vs {list(b.keys())!r}"
        for key in a:
            found = first_difference(a[key], b[key], f"{path}[{key!r}]")
            if found:
                return found
        return None
    try:
        same = bool(a == b)
    except Exception as exc:  # e.g. objects whose == is elementwise
        raise TypeError(
            f"first_difference: cannot compare {type(a).__name__} objects at {path}: {exc}"
        ) from exc
    return None if same else f"{path}: {a!r} vs {b!r}"


def assert_bitwise_equal(a: Any, b: Any, *, name: str = "result") -> None:
    """Raise ``AssertionError`` naming the first place where ``a`` and ``b`` differ bitwise.

    See :func:`first_difference` for what is compared (and what it refuses, with
    ``TypeError``).
    """
    check_type("assert_bitwise_equal", "name", name, str)
    found = first_difference(a, b, name)
    if found is not None:
        raise AssertionError(f"not bitwise equal: {found}")
