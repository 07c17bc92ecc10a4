"""Plumbing for the mixed-precision chapter (introduced in chapter 04).

The trick itself (``torch.autocast``, ``torch.amp.GradScaler``) stays visible in the
chapter; this module holds what is not the lesson:

- :func:`native_bf16` turns :func:`tricks_helpers.env.bf16_support` into a yes/no, so a
  chapter can choose its verdict wording by code;
- :func:`autocast_dtypes` lists the low-precision dtypes worth trying on a device;
- :func:`run_steps` runs a training step function over a fixed, seeded sequence of
  mini-batches and returns the loss curve, so two variants see exactly the same batches.

Importing this module changes no global state.
"""

from __future__ import annotations

from typing import Callable

import torch

from tricks_helpers import env

__all__ = ["native_bf16", "autocast_dtypes", "run_steps"]


def native_bf16(device: str | torch.device = "cpu") -> bool:
    """True when ``device`` computes bfloat16 natively (see :func:`tricks_helpers.env.bf16_support`).

    On a CPU without ``avx512_bf16``/``amx_bf16`` bfloat16 still works, but it is emulated
    through float32, so autocast to bfloat16 saves memory but not time.

    Raises:
        ValueError: on a device type other than ``cpu`` or ``cuda``.
    """
    return env.bf16_support(device).startswith("native")


def autocast_dtypes(device: str | torch.device = "cpu") -> list[torch.dtype]:
    """Low-precision dtypes ``torch.autocast`` is worth trying with on ``device``.

    CPU: ``[torch.bfloat16]`` (float16 autocast exists on CPU but is rarely faster there).
    CUDA: ``[torch.float16]`` plus ``torch.bfloat16`` where the GPU supports it natively.

    Raises:
        ValueError: on a device type other than ``cpu`` or ``cuda``, or ``cuda`` without CUDA.
    """
    kind = torch.device(device).type
    if kind == "cpu":
        return [torch.bfloat16]
    if kind != "cuda":
        raise ValueError(f"autocast_dtypes: expected a 'cpu' or 'cuda' device, got {kind!r}")
    if not torch.cuda.is_available():
        raise ValueError("autocast_dtypes: CUDA requested but torch.cuda.is_available() is False")
    return [torch.float16] + ([torch.bfloat16] if native_bf16("cuda") else [])


def run_steps(step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor | float],
              X: torch.Tensor, y: torch.Tensor, *, steps: int, batch_size: int,
              seed: int = 0) -> list[float]:
    """Call ``step(xb, yb)`` on ``steps`` seeded random mini-batches; return the losses.

    The batch order comes from a private ``torch.Generator`` seeded with ``seed`` (the global
    random state is not touched), so two training variants given the same ``seed`` see
    identical batches in identical order.

    Args:
        step: one training step; returns the loss (a tensor or a float).
        X, y: inputs and targets, first dimension = samples (same length).
        steps: number of steps (>= 1).
        batch_size: samples per step (1 <= batch_size <= len(X)); each epoch is a fresh
            permutation, batches do not straddle epochs.
        seed: seed of the batch order.

    Returns:
        The loss of every step, as floats.

    Raises:
        TypeError: if ``step`` is not callable or ``X``/``y`` are not tensors.
        ValueError: on mismatched lengths, bad counts, or a non-finite loss (with the step number).
    """
    if not callable(step):
        raise TypeError(f"run_steps: step must be callable, got {type(step).__name__}")
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("run_steps: X and y must be tensors")
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"run_steps: X and y need the same non-zero length, got {X.shape[0]} "
                         f"and {y.shape[0]}")
    for name, value, hi in (("steps", steps, None), ("batch_size", batch_size, X.shape[0])):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (
                hi is not None and value > hi):
            bound = f" and <= {hi}" if hi is not None else ""
            raise ValueError(f"run_steps: {name} must be an integer >= 1{bound}, got {value!r}")
    gen = torch.Generator().manual_seed(seed)
    per_epoch = X.shape[0] // batch_size
    losses: list[float] = []
    order = torch.randperm(X.shape[0], generator=gen)
    for i in range(steps):
        j = i % per_epoch
        if i > 0 and j == 0:
            order = torch.randperm(X.shape[0], generator=gen)
        idx = order[j * batch_size:(j + 1) * batch_size].to(X.device)
        loss = float(step(X[idx], y[idx]))
        if loss != loss or loss in (float("inf"), float("-inf")):
            raise ValueError(f"run_steps: non-finite loss {loss} at step {i}")
        losses.append(loss)
    return losses
