"""Resuming a training run bit for bit from a checkpoint (introduced in chapter 02).

A run consumes more state than its weights: the Python, numpy and torch RNGs (augmentation,
dropout), the data loader's generator (the next epoch's order) and the sampler's position in
the current epoch, the optimizer's buffers, the scheduler's step count and the AMP
``GradScaler``'s scale. :func:`checkpoint_state` saves all of them; :func:`load_checkpoint`
restores all of them, or all but the ones named in ``omit``, into a freshly built run.

Guarantees:

- training ``2 * n`` steps equals training ``n`` steps, saving, loading in a new process
  (:func:`resume_in_fresh_process`) and training ``n`` more: the losses of every step and the
  final state (weights, optimizer, scheduler, scaler) are bitwise equal, on the same software
  and hardware;
- :class:`ResumableSampler` saves the current epoch's order and its position in it, and
  resumes mid-epoch without replaying the skipped batches;
- the loader's iterator is created *before* the generator state is restored: creating a
  ``DataLoader`` iterator draws a base seed from the loader's generator, a draw the
  uninterrupted run did not make at that point;
- :func:`new_run` seeds the global RNGs (it is the start of a run); nothing else here changes
  global state except by restoring a checkpoint's RNG states, which is its purpose;
- a checkpoint carries the SHA-256 of its payload, verified before it is unpickled (a flipped
  bit is an error, never a run resumed from other state), and a load restores every component
  or none (the global RNGs are put back when one fails).

The task is deliberately tiny (40 samples of 8 features, 4 classes, batches of 8, an MLP with
dropout), so a run of a dozen steps takes milliseconds.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Sampler, TensorDataset

from tricks_helpers._checkpoint_file import CheckpointFileError, read_checked, write_checked
from tricks_helpers._checks import check_int, check_type

__all__ = [
    "COMPONENTS",
    "ResumableSampler",
    "Run",
    "new_run",
    "train",
    "checkpoint_state",
    "save_checkpoint",
    "load_checkpoint",
    "final_state",
    "resume_in_fresh_process",
    "CorruptCheckpointError",
]

#: What a checkpoint holds besides the model's weights, in the order it is restored.
COMPONENTS = (
    "torch_rng",
    "numpy_rng",
    "python_rng",
    "loader_generator",
    "sampler",
    "optimizer",
    "scheduler",
    "scaler",
)

_SAMPLES, _FEATURES, _CLASSES, _BATCH = 40, 8, 4, 8


class CorruptCheckpointError(ValueError):
    """A checkpoint file that is not one :func:`save_checkpoint` wrote, fails its checksum,
    or cannot be restored (nothing is then restored)."""


class ResumableSampler(Sampler[int]):
    """A shuffling sampler that saves the current epoch's order and its position in it.

    Each epoch draws a permutation from ``generator``; :meth:`state_dict` returns that order
    and how many of its indices were handed out, :meth:`load_state_dict` makes the next
    iteration hand out the rest of it (then new epochs draw from ``generator`` again).
    Exact with ``num_workers=0``, where the loader takes indices only as it builds batches.
    (``torchdata.stateful_dataloader.StatefulDataLoader`` does the same for any loader.)

    Args:
        num_samples: size of the data set (>= 1).
        generator: the generator the order is drawn from.

    Raises:
        TypeError: on a non-integer size or a generator that is not a ``torch.Generator``.
        ValueError: on a size below 1.
    """

    def __init__(self, num_samples: int, generator: torch.Generator) -> None:
        self.num_samples = check_int("ResumableSampler", "num_samples", num_samples, minimum=1)
        self.generator = check_type("ResumableSampler", "generator", generator, torch.Generator)
        self.order: list[int] = []
        self.position = 0
        self._pending = False

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        if not self._pending:
            self.order = torch.randperm(self.num_samples, generator=self.generator).tolist()
            self.position = 0
        self._pending = False
        while self.position < len(self.order):
            index = self.order[self.position]
            self.position += 1
            yield index

    def state_dict(self) -> dict[str, Any]:
        """The current epoch's order and the number of indices already handed out."""
        return {"order": list(self.order), "position": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume inside the saved epoch at the saved position (``{"order": [], "position":
        0}``, saved before the first epoch began, starts afresh).

        Raises:
            TypeError: when ``state`` is not a dict.
            ValueError: when its order is not a permutation of the data set or the position
                is outside it.
        """
        check_type("ResumableSampler.load_state_dict", "state", state, dict)
        order, position = state.get("order"), state.get("position")
        if order == [] and position == 0:  # saved before its first epoch began
            self.order, self.position, self._pending = [], 0, False
            return
        if not isinstance(order, list) or sorted(order) != list(range(self.num_samples)):
            raise ValueError(
                f"ResumableSampler.load_state_dict: order must be a permutation of "
                f"range({self.num_samples})"
            )
        check_int("ResumableSampler.load_state_dict", "position", position, minimum=0)
        if position > self.num_samples:
            raise ValueError(
                f"ResumableSampler.load_state_dict: position must be <= {self.num_samples}, "
                f"got {position}"
            )
        self.order, self.position, self._pending = list(order), position, True


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


def _build(generator: torch.Generator) -> Run:
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
    return _build(torch.Generator().manual_seed(seed + 1))


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


def checkpoint_state(run: Run) -> dict[str, Any]:
    """Everything needed to continue ``run`` bit for bit: ``"model"`` and :data:`COMPONENTS`."""
    check_type("checkpoint_state", "run", run, Run)
    return {
        "model": run.model.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
        "loader_generator": run.generator.get_state(),
        "sampler": run.sampler.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "scaler": run.scaler.state_dict(),
    }


def save_checkpoint(run: Run, path: str | os.PathLike) -> Path:
    """Write :func:`checkpoint_state` to ``path``, with its SHA-256, atomically.

    The file is a header line, the SHA-256 and size of the payload and the payload
    (``torch.save`` of the state); :func:`load_checkpoint` verifies the size and the checksum
    before it unpickles anything.
    It is written under a unique temporary name in the same folder and renamed into place, so
    ``path`` holds the old file or the complete new one; the temporary never stays behind.

    Raises:
        TypeError: when ``run`` is not a :class:`Run` or ``path`` not a str or PathLike.
        IsADirectoryError: when ``path`` is a directory.
        FileNotFoundError: when the folder of ``path`` does not exist.
    """
    check_type("save_checkpoint", "run", run, Run)
    state = checkpoint_state(run)
    buf = io.BytesIO()
    torch.save(state, buf)
    return write_checked("save_checkpoint", path, buf.getvalue())


def _read_checkpoint(where: str, path: str | os.PathLike) -> dict[str, Any]:
    """The state in checkpoint file ``path``, after its checksum (see :func:`save_checkpoint`)."""
    try:
        payload = read_checked(where, path)
    except CheckpointFileError as exc:
        raise CorruptCheckpointError(str(exc)) from None
    name = Path(path).name
    try:
        state = torch.load(io.BytesIO(payload), weights_only=False)
    except Exception as exc:  # the checksum matched: a file written by other code
        raise CorruptCheckpointError(
            f"{where}: {name!r} cannot be unpickled ({type(exc).__name__})"
        ) from None
    missing = [k for k in ("model", *COMPONENTS) if not isinstance(state, dict) or k not in state]
    if missing:
        raise CorruptCheckpointError(f"{where}: {name!r} lacks {', '.join(missing)}")
    return state


def _check_omit(where: str, omit: Sequence[str]) -> tuple[str, ...]:
    if isinstance(omit, str) or not isinstance(omit, Sequence):
        raise TypeError(f"{where}: omit must be a sequence of names, got {omit!r}")
    unknown = [name for name in omit if name not in COMPONENTS]
    if unknown:
        raise ValueError(f"{where}: unknown component(s) {unknown}; known: {list(COMPONENTS)}")
    return tuple(omit)


def load_checkpoint(path: str | os.PathLike, *, omit: Sequence[str] = ()) -> Run:
    """Build a fresh run and restore the checkpoint at ``path`` into it, except ``omit``.

    The loader's iterator is created first, so its base-seed draw happens before the
    generator's state is restored. An omitted component keeps what the fresh run has.
    The file is unpickled (``weights_only=False``: numpy's and Python's RNG states are not
    tensors), so load only checkpoints you wrote.

    A checkpoint saved before the first step resumes too: its loader's iterator is then
    created by the first step, as in the run that saved it.

    Guarantees: the file's checksum is verified before anything is unpickled; the restore is
    all or nothing: when any component cannot be restored (a missing one, a sampler order
    that is not a permutation), the global RNG states are put back as they were before the
    call and :class:`CorruptCheckpointError` is raised.

    Raises:
        TypeError: when ``omit`` is not a sequence of names.
        ValueError: on a name not in :data:`COMPONENTS`.
        CorruptCheckpointError: (a ``ValueError``) the file is not a checkpoint written by
            :func:`save_checkpoint`, fails its checksum, lacks a component, or a component
            cannot be restored.
        FileNotFoundError: when ``path`` does not exist.
    """
    omit = _check_omit("load_checkpoint", omit)
    state = _read_checkpoint("load_checkpoint", path)
    before = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    try:
        return _restore(state, omit)
    except Exception as exc:  # all or nothing: the global RNGs as they were
        torch.set_rng_state(before[0])
        np.random.set_state(before[1])
        random.setstate(before[2])
        raise CorruptCheckpointError(
            f"load_checkpoint: the checkpoint cannot be restored ({type(exc).__name__}: {exc}); "
            f"the global RNG states are left as they were"
        ) from exc


def _restore(state: dict[str, Any], omit: tuple[str, ...]) -> Run:
    run = _build(torch.Generator())
    run.model.load_state_dict(state["model"])
    started = "sampler" in omit or bool(state["sampler"].get("order"))
    if started:  # the saved run had begun an epoch, so it held an iterator
        run.batches = iter(run.loader)  # draws from the generator: before restoring it
    restore = {
        "torch_rng": lambda s: torch.set_rng_state(s),
        "numpy_rng": lambda s: np.random.set_state(s),
        "python_rng": lambda s: random.setstate(s),
        "loader_generator": lambda s: run.generator.set_state(s),
        "sampler": run.sampler.load_state_dict,
        "optimizer": run.optimizer.load_state_dict,
        "scheduler": run.scheduler.load_state_dict,
        "scaler": run.scaler.load_state_dict,
    }
    for name in COMPONENTS:
        if name not in omit:
            restore[name](state[name])
    return run


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


def _variant_name(omit: Sequence[str]) -> str:
    return "complete" if not omit else "without " + "+".join(omit)


def resume_in_fresh_process(
    path: str | os.PathLike,
    steps: int,
    variants: Sequence[Sequence[str]] = ((),),
    *,
    timeout: float = 120.0,
) -> dict[str, dict[str, Any]]:
    """Load the checkpoint in a new Python process and train ``steps`` more steps, per variant.

    Each variant is a tuple of components to omit (``()``: the complete checkpoint). The child
    process runs them one after another; before each, it seeds its global RNGs with an
    unrelated seed (as a new process would hold some other state), so an omitted RNG state is
    wrong in the same way on every run.

    Returns:
        ``{"complete" or "without <names>": final_state}`` of each variant.

    The child writes its results into a temporary folder of its own, so several calls may
    resume one checkpoint at once.

    Raises:
        TypeError, ValueError: on a bad ``steps`` or variant.
        CorruptCheckpointError: the checkpoint fails its checksum (see :func:`load_checkpoint`).
        FileNotFoundError: when ``path`` does not exist.
        RuntimeError: when the child process fails (its last output lines are included).
    """
    steps = check_int("resume_in_fresh_process", "steps", steps, minimum=1)
    variants = [_check_omit("resume_in_fresh_process", v) for v in variants]
    if not variants:
        raise ValueError("resume_in_fresh_process: need at least one variant")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"resume_in_fresh_process: no checkpoint at {path.name}")
    _read_checkpoint("resume_in_fresh_process", path)  # a damaged file fails here, plainly
    with tempfile.TemporaryDirectory(prefix="resumed-") as folder:  # one per call: no races
        out = Path(folder) / "resumed.pt"
        cmd = [sys.executable, "-m", "tricks_helpers.resume", str(path), str(steps), str(out)]
        cmd += [",".join(v) or "-" for v in variants]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise RuntimeError(
                f"resume_in_fresh_process: child failed ({done.returncode}):\n{tail}"
            )
        return torch.load(out, weights_only=False)


def _main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="resume a checkpoint of the tiny task")
    parser.add_argument("checkpoint")
    parser.add_argument("steps", type=int)
    parser.add_argument("out")
    parser.add_argument("variants", nargs="+", help="comma-separated components to omit, or -")
    args = parser.parse_args(argv)
    results = {}
    for spec in args.variants:
        omit = () if spec == "-" else tuple(spec.split(","))
        random.seed(999)
        np.random.seed(999)
        torch.manual_seed(999)
        run = load_checkpoint(args.checkpoint, omit=omit)
        train(run, args.steps)
        results[_variant_name(omit)] = final_state(run)
    torch.save(results, args.out)


if __name__ == "__main__":
    _main()
