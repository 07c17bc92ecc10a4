"""The tiny training run chapter 02 checkpoints and resumes: built, seeded, trained, compared.

40 samples of 8 features, 4 classes, batches of 8, an MLP with dropout, SGD with momentum, a
step scheduler and an AMP ``GradScaler``: a dozen steps take milliseconds, and each step draws
from the Python, numpy and torch RNGs, so a checkpoint that misses one of them shows.
:func:`new_run` seeds the global RNGs (it is the start of a run); nothing else here changes
global state.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tricks_helpers._checks import check_int, check_type
from tricks_helpers.resume.sampler import ResumableSampler

__all__ = ["Run", "build_run", "new_run", "train", "final_state"]

_SAMPLES, _FEATURES, _CLASSES, _BATCH = 40, 8, 4, 8


@dataclass
class Run:
    """Everything a run of the tiny task holds; ``losses`` has one float per step taken."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler
    generator: torch.Generator
    sampler: ResumableSampler
    loader: DataLoader
    batches: Iterator[Any] | None = None
    losses: list[float] = field(default_factory=list)


def _data() -> TensorDataset:
    g = torch.Generator().manual_seed(1234)  # the data set is fixed, whatever the run's seed
    X = torch.randn(_SAMPLES, _FEATURES, generator=g)
    y = torch.randint(0, _CLASSES, (_SAMPLES,), generator=g)
    return TensorDataset(X, y)


def build_run(generator: torch.Generator) -> Run:
    """A run of the tiny task whose loader draws from ``generator``; no RNG is seeded."""
    model = nn.Sequential(
        nn.Linear(_FEATURES, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, _CLASSES)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    # fp32 on the CPU: the scale multiplies and divides by powers of two, exactly; its state
    # (scale, growth tracker) still changes every growth_interval steps and is saved.
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
    sampler = ResumableSampler(_SAMPLES, generator)
    loader = DataLoader(_data(), batch_size=_BATCH, sampler=sampler, generator=generator)
    return Run(model, optimizer, scheduler, scaler, generator, sampler, loader)


def new_run(seed: int = 0) -> Run:
    """A new run: seeds Python, numpy and torch with ``seed``, builds model, optimizer, loader.

    Raises:
        TypeError: on a non-integer seed.
        ValueError: on a seed outside ``[0, 2**32 - 1]``.
    """
    seed = check_int("new_run", "seed", seed, minimum=0, maximum=2**32 - 1)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return build_run(torch.Generator().manual_seed(seed + 1))


def _next_batch(run: Run) -> tuple[torch.Tensor, torch.Tensor]:
    if run.batches is None:
        run.batches = iter(run.loader)
    try:
        return next(run.batches)
    except StopIteration:  # a new epoch: a new order from the loader's generator
        run.batches = iter(run.loader)
        return next(run.batches)


def train(run: Run, steps: int) -> list[float]:
    """Take ``steps`` training steps; returns their losses (also appended to ``run.losses``).

    Each step draws from all three global RNGs (a numpy scale, a Python coin flip, torch
    noise and dropout), so a checkpoint that misses one of them shows.

    Raises:
        TypeError: on a wrong ``run`` or a non-integer ``steps``.
        ValueError: on ``steps`` < 1.
    """
    check_type("train", "run", run, Run)
    steps = check_int("train", "steps", steps, minimum=1)
    run.model.train()
    out = []
    for _ in range(steps):
        xb, yb = _next_batch(run)
        xb = xb * float(np.random.uniform(0.8, 1.2))  # numpy's global RNG
        if random.random() < 0.5:  # Python's global RNG
            xb = xb.flip(1)
        xb = xb + 0.05 * torch.randn(xb.shape)  # torch's global RNG (and dropout below)
        loss = F.cross_entropy(run.model(xb), yb)
        run.optimizer.zero_grad()
        run.scaler.scale(loss).backward()
        run.scaler.step(run.optimizer)
        run.scaler.update()
        run.scheduler.step()
        out.append(loss.item())
    run.losses.extend(out)
    return out


def final_state(run: Run) -> dict[str, Any]:
    """What two runs are compared on: losses, weights, optimizer, scheduler and scaler states."""
    check_type("final_state", "run", run, Run)
    return {
        "losses": list(run.losses),
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "scaler": run.scaler.state_dict(),
    }
