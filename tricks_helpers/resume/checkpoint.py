"""A checkpoint that holds everything a run consumes, checked before it is restored (chapter 02).

:func:`checkpoint_state` saves the weights and every :data:`COMPONENTS` (the global RNGs, the
loader's generator, the sampler's position, the optimizer, scheduler and scaler);
:func:`load_checkpoint` restores all of them, or all but ``omit``, into a fresh run. A file
carries the SHA-256 of its payload, verified before it is unpickled, and a load restores every
component or none (the global RNGs are put back when one fails).
"""

from __future__ import annotations

import io
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tricks_helpers._checkpoint_file import CheckpointFileError, read_checked, write_checked
from tricks_helpers._checks import check_type
from tricks_helpers.resume.tiny_run import Run, build_run

__all__ = [
    "COMPONENTS",
    "CorruptCheckpointError",
    "checkpoint_state",
    "save_checkpoint",
    "read_checkpoint",
    "check_omit",
    "load_checkpoint",
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


class CorruptCheckpointError(ValueError):
    """A checkpoint file that is not one :func:`save_checkpoint` wrote, fails its checksum,
    or cannot be restored (nothing is then restored)."""


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


def read_checkpoint(where: str, path: str | os.PathLike) -> dict[str, Any]:
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


def check_omit(where: str, omit: Sequence[str]) -> tuple[str, ...]:
    """``omit`` as a tuple of :data:`COMPONENTS` names (TypeError, ValueError otherwise)."""
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
    omit = check_omit("load_checkpoint", omit)
    state = read_checkpoint("load_checkpoint", path)
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
    run = build_run(torch.Generator())
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
