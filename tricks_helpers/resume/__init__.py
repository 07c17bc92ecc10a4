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

A face: :mod:`~tricks_helpers.resume.tiny_run` (the run: built, trained, compared),
:mod:`~tricks_helpers.resume.sampler` (the sampler that resumes mid-epoch),
:mod:`~tricks_helpers.resume.checkpoint` (save, check, restore) and
:mod:`~tricks_helpers.resume.fresh_process` (resume in a new process;
``python -m tricks_helpers.resume`` is its child).
"""

from __future__ import annotations

from tricks_helpers.resume.checkpoint import (
    COMPONENTS,
    CorruptCheckpointError,
    checkpoint_state,
    load_checkpoint,
    save_checkpoint,
)
from tricks_helpers.resume.fresh_process import resume_in_fresh_process
from tricks_helpers.resume.sampler import ResumableSampler
from tricks_helpers.resume.tiny_run import Run, final_state, new_run, train

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
