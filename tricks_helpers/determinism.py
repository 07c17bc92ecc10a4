"""Deterministic settings, RNG snapshots and bitwise reproducibility checks (chapter 02).

- :func:`enable_determinism` turns on everything PyTorch offers for run-to-run identical
  results (``torch.use_deterministic_algorithms``, cuDNN ``deterministic``/``benchmark``
  flags, ``CUBLAS_WORKSPACE_CONFIG``) and returns the previous settings;
  :func:`restore_settings` puts them back, and :func:`deterministic` does both as a context
  manager. It refuses, before changing anything, when CUDA is already initialised without
  ``CUBLAS_WORKSPACE_CONFIG``: cuBLAS may already have read the environment.
- :func:`snapshot_rng` / :func:`restore_rng` capture and restore every RNG state: Python's
  ``random``, numpy's global RNG, torch on the CPU and on every CUDA device.
- :func:`assert_bitwise_equal` compares results bit for bit (tensors, arrays, floats, nested
  containers) and says where they differ; :func:`assert_reproducible` runs a function twice
  from the same RNG state and applies it.

Importing this module changes no global state.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tricks_helpers._checks import check_bool, check_callable, check_choice, check_type

__all__ = [
    "CUBLAS_WORKSPACE_CONFIG",
    "DeterminismSettings",
    "current_settings",
    "enable_determinism",
    "restore_settings",
    "deterministic",
    "RNGState",
    "snapshot_rng",
    "restore_rng",
    "preserved_rng",
    "first_difference",
    "assert_bitwise_equal",
    "assert_reproducible",
]

#: The value cuBLAS needs for deterministic results (":16:8" also works, with less memory
#: and possibly less speed). See the cuBLAS documentation, "Results reproducibility".
CUBLAS_WORKSPACE_CONFIG = ":4096:8"
_CUBLAS_OK = (":4096:8", ":16:8")
_ENV = "CUBLAS_WORKSPACE_CONFIG"


@dataclass(frozen=True)
class DeterminismSettings:
    """The global settings :func:`enable_determinism` changes (``None``: variable unset)."""

    deterministic_algorithms: bool
    warn_only: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool
    cublas_workspace_config: str | None


def current_settings() -> DeterminismSettings:
    """Read the current determinism settings (changes nothing)."""
    return DeterminismSettings(
        deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
        cublas_workspace_config=os.environ.get(_ENV),
    )


def restore_settings(settings: DeterminismSettings) -> None:
    """Put back settings returned by :func:`current_settings` or :func:`enable_determinism`.

    Raises:
        TypeError: if ``settings`` is not a :class:`DeterminismSettings`.
    """
    check_type("restore_settings", "settings", settings, DeterminismSettings)
    torch.use_deterministic_algorithms(
        settings.deterministic_algorithms, warn_only=settings.warn_only
    )
    torch.backends.cudnn.deterministic = settings.cudnn_deterministic
    torch.backends.cudnn.benchmark = settings.cudnn_benchmark
    if settings.cublas_workspace_config is None:
        os.environ.pop(_ENV, None)
    else:
        os.environ[_ENV] = settings.cublas_workspace_config


def enable_determinism(
    *, warn_only: bool = False, cublas_workspace_config: str = CUBLAS_WORKSPACE_CONFIG
) -> DeterminismSettings:
    """Turn on full determinism and return the settings it replaced.

    Sets ``torch.use_deterministic_algorithms(True, warn_only=warn_only)`` (ops without a
    deterministic implementation then raise ``RuntimeError``, or only warn with
    ``warn_only=True``), ``torch.backends.cudnn.deterministic = True``,
    ``torch.backends.cudnn.benchmark = False`` and the environment variable
    ``CUBLAS_WORKSPACE_CONFIG`` (unless it already holds a deterministic value). Nothing
    is changed when it raises.

    Args:
        warn_only: warn instead of raising on nondeterministic ops.
        cublas_workspace_config: ``":4096:8"`` (default) or ``":16:8"``.

    Returns:
        The previous :class:`DeterminismSettings`, for :func:`restore_settings`.

    Raises:
        TypeError: on a non-bool ``warn_only`` or a non-string ``cublas_workspace_config``.
        ValueError: on an unknown ``cublas_workspace_config``.
        RuntimeError: if CUDA is already initialised and ``CUBLAS_WORKSPACE_CONFIG`` is not
            set to a deterministic value: the variable is read once, when cuBLAS is first set
            up, so setting it now may not take effect. Set it (or call this) before any CUDA
            work.
    """
    check_bool("enable_determinism", "warn_only", warn_only)
    check_type("enable_determinism", "cublas_workspace_config", cublas_workspace_config, str)
    check_choice(
        "enable_determinism", "cublas_workspace_config", cublas_workspace_config, _CUBLAS_OK
    )
    previous = current_settings()
    if previous.cublas_workspace_config not in _CUBLAS_OK and torch.cuda.is_initialized():
        raise RuntimeError(
            "enable_determinism: CUDA is already initialised but CUBLAS_WORKSPACE_CONFIG is "
            f"{previous.cublas_workspace_config!r}; it is read once, when cuBLAS is first set up, "
            "so setting it now may not take effect. Call enable_determinism() (or export "
            f"CUBLAS_WORKSPACE_CONFIG={cublas_workspace_config}) before the first CUDA operation."
        )
    if previous.cublas_workspace_config not in _CUBLAS_OK:
        os.environ[_ENV] = cublas_workspace_config
    torch.use_deterministic_algorithms(True, warn_only=warn_only)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return previous


@contextlib.contextmanager
def deterministic(
    *, warn_only: bool = False, cublas_workspace_config: str = CUBLAS_WORKSPACE_CONFIG
) -> Iterator[DeterminismSettings]:
    """Context manager: :func:`enable_determinism` on entry, :func:`restore_settings` on exit.

    Yields:
        The settings in force before the block (they are restored even if the block raises).
    """
    previous = enable_determinism(
        warn_only=warn_only, cublas_workspace_config=cublas_workspace_config
    )
    try:
        yield previous
    finally:
        restore_settings(previous)


# --------------------------------------------------------------------------- RNG states


@dataclass(frozen=True)
class RNGState:
    """Every RNG state of the process: Python, numpy global, torch CPU, CUDA devices."""

    python: tuple
    numpy: tuple
    torch_cpu: torch.Tensor
    cuda: tuple[torch.Tensor, ...]


def snapshot_rng() -> RNGState:
    """Capture the state of ``random``, numpy's global RNG, torch CPU and all CUDA devices.

    Where CUDA is available this initialises it (to read the device generators).
    """
    cuda = tuple(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else ()
    return RNGState(
        python=random.getstate(),
        numpy=np.random.get_state(),
        torch_cpu=torch.get_rng_state(),
        cuda=cuda,
    )


def restore_rng(state: RNGState) -> None:
    """Restore every RNG state captured by :func:`snapshot_rng`.

    Raises:
        TypeError: if ``state`` is not an :class:`RNGState`.
        ValueError: if it holds a different number of CUDA devices than this process sees.
    """
    check_type("restore_rng", "state", state, RNGState)
    n_cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if len(state.cuda) != n_cuda:
        raise ValueError(
            f"restore_rng: the snapshot holds {len(state.cuda)} CUDA device state(s) "
            f"but this process sees {n_cuda}"
        )
    random.setstate(state.python)
    np.random.set_state(state.numpy)
    torch.set_rng_state(state.torch_cpu)
    if state.cuda:
        torch.cuda.set_rng_state_all(list(state.cuda))


@contextlib.contextmanager
def preserved_rng() -> Iterator[RNGState]:
    """Context manager: every RNG state is as it was before the block after it."""
    state = snapshot_rng()
    try:
        yield state
    finally:
        restore_rng(state)


# --------------------------------------------------------------------------- bitwise checks


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


def assert_reproducible(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` twice from the same RNG state; assert bitwise-equal results.

    Every RNG (see :func:`snapshot_rng`) is restored before the second run, so only
    nondeterminism inside ``fn`` (kernels, threads, iteration order, global state it changes
    besides the RNGs) can make the runs differ. After the call the RNGs are where the second
    run left them.

    Returns:
        The result of the first run.

    Raises:
        TypeError: if ``fn`` is not callable.
        AssertionError: if the two results differ, naming where (e.g. ``result[1]['w']``).
    """
    check_callable("assert_reproducible", "fn", fn)
    state = snapshot_rng()
    first = fn(*args, **kwargs)
    restore_rng(state)
    second = fn(*args, **kwargs)
    found = first_difference(first, second)
    if found is not None:
        name = getattr(fn, "__name__", type(fn).__name__)
        raise AssertionError(
            f"{name} is not reproducible: two runs from the same RNG state differ at {found}"
        )
    return first
