"""Deterministic settings, RNG snapshots and bitwise reproducibility checks (chapter 02).

- :func:`enable_determinism` turns on everything PyTorch offers for run-to-run identical
  results (``torch.use_deterministic_algorithms``, cuDNN ``deterministic``/``benchmark``
  flags, ``CUBLAS_WORKSPACE_CONFIG``) and returns the previous settings;
  :func:`restore_settings` puts them back, and :func:`deterministic` does both as a context
  manager. On releases that require ``CUBLAS_WORKSPACE_CONFIG`` under deterministic mode
  (:func:`cublas_workspace_required`: before torch 2.10) it refuses, before changing anything,
  when CUDA is already initialised without it: cuBLAS may already have read the environment.
- :func:`snapshot_rng` / :func:`restore_rng` capture and restore every RNG state: Python's
  ``random``, numpy's global RNG, torch on the CPU and on every CUDA device.
- :func:`assert_reproducible` runs a function twice from the same RNG state and compares the
  results bit for bit with :func:`tricks_helpers.bitwise.first_difference`.

Importing this module changes no global state.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tricks_helpers._checks import check_bool, check_callable, check_choice, check_type
from tricks_helpers.bitwise import first_difference

__all__ = [
    "CUBLAS_WORKSPACE_CONFIG",
    "CUBLAS_CHECK_REMOVED_IN",
    "cublas_workspace_required",
    "DeterminismSettings",
    "current_settings",
    "enable_determinism",
    "restore_settings",
    "deterministic",
    "RNGState",
    "snapshot_rng",
    "restore_rng",
    "preserved_rng",
    "assert_reproducible",
]

#: The value cuBLAS needs for deterministic results (":16:8" also works, with less memory
#: and possibly less speed). See the cuBLAS documentation, "Results reproducibility".
CUBLAS_WORKSPACE_CONFIG = ":4096:8"
_CUBLAS_OK = (":4096:8", ":16:8")
_ENV = "CUBLAS_WORKSPACE_CONFIG"

#: The first torch release whose deterministic mode no longer checks ``CUBLAS_WORKSPACE_CONFIG``.
#: Up to 2.9, cuBLAS matrix products under ``use_deterministic_algorithms(True)`` raised
#: ``RuntimeError`` ("...it uses CuBLAS and you have CUDA >= 10.2...") unless it held
#: ``:4096:8`` or ``:16:8``. Upstream PR #161749 ("update cuBLAS determinism docs, remove
#: workspace requirement checks", opened 2025-08-28, after the 2.9 branch cut) removed the check
#: and ``at::Context::alertCuBLASConfigNotDeterministic``: PyTorch has allocated a cuBLAS
#: workspace per handle and stream since CUDA 11, which cuBLAS documents as enough. Checked for
#: 2.13: neither the function nor the message is in ``libtorch_cpu.so`` (where ``at::Context``
#: lives) and ``torch.use_deterministic_algorithms``'s docstring no longer names the variable.
#: The boundary was read off PyPI's x86-64 wheels (2026-11-23): 2.9.1's ``libtorch_cpu.so`` has
#: ``alertCuBLASConfigNotDeterministic`` and the "To enable deterministic behavior ... CuBLAS"
#: message, 2.10.0's has neither.
CUBLAS_CHECK_REMOVED_IN = (2, 10)


def cublas_workspace_required(torch_version: str | None = None) -> bool:
    """Whether deterministic mode on CUDA raises without ``CUBLAS_WORKSPACE_CONFIG`` (chapter 02).

    Args:
        torch_version: a release such as ``"2.9.1+cu128"`` (default: the running torch).

    Returns:
        ``True`` for releases before :data:`CUBLAS_CHECK_REMOVED_IN`, ``False`` from it on.

    Raises:
        TypeError: on a non-string ``torch_version``.
        ValueError: on a string that does not start with ``major.minor``.
    """
    version = str(torch.__version__) if torch_version is None else torch_version
    check_type("cublas_workspace_required", "torch_version", version, str)
    parts = version.split("+")[0].split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        raise ValueError(
            f"cublas_workspace_required: torch_version must start with major.minor, got {version!r}"
        )
    return (int(parts[0]), int(parts[1])) < CUBLAS_CHECK_REMOVED_IN


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
    ``CUBLAS_WORKSPACE_CONFIG`` (unless it already holds a deterministic value; torch releases
    before 2.10 require it, later ones ignore it for determinism, see
    :func:`cublas_workspace_required`). Nothing is changed when it raises.

    Args:
        warn_only: warn instead of raising on nondeterministic ops.
        cublas_workspace_config: ``":4096:8"`` (default) or ``":16:8"``.

    Returns:
        The previous :class:`DeterminismSettings`, for :func:`restore_settings`.

    Raises:
        TypeError: on a non-bool ``warn_only`` or a non-string ``cublas_workspace_config``.
        ValueError: on an unknown ``cublas_workspace_config``.
        RuntimeError: on a torch release before 2.10, if CUDA is already initialised and
            ``CUBLAS_WORKSPACE_CONFIG`` is not set to a deterministic value: the variable is read
            once, when cuBLAS is first set up, so setting it now may not take effect. Set it (or
            call this) before any CUDA work. From 2.10 on it does not refuse.
    """
    check_bool("enable_determinism", "warn_only", warn_only)
    check_type("enable_determinism", "cublas_workspace_config", cublas_workspace_config, str)
    check_choice(
        "enable_determinism", "cublas_workspace_config", cublas_workspace_config, _CUBLAS_OK
    )
    previous = current_settings()
    if (
        previous.cublas_workspace_config not in _CUBLAS_OK
        and torch.cuda.is_initialized()
        and cublas_workspace_required()
    ):
        raise RuntimeError(
            f"enable_determinism: torch {torch.__version__} (before 2.10) raises on cuBLAS "
            "products in deterministic mode unless CUBLAS_WORKSPACE_CONFIG is set; CUDA is "
            f"already initialised but it is {previous.cublas_workspace_config!r}, and it is read "
            "once, when cuBLAS is first set up, so setting it now may not take effect. Call "
            f"enable_determinism() (or export CUBLAS_WORKSPACE_CONFIG={cublas_workspace_config}) "
            "before the first CUDA operation."
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
