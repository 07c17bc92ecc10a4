"""Resuming a checkpoint in a new Python process, as a restarted job would (chapter 02).

``python -m tricks_helpers.resume CHECKPOINT STEPS OUT VARIANT...`` is the child
:func:`resume_in_fresh_process` starts (:func:`main`).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tricks_helpers._checks import check_int
from tricks_helpers.resume.checkpoint import check_omit, load_checkpoint, read_checkpoint
from tricks_helpers.resume.tiny_run import final_state, train

__all__ = ["resume_in_fresh_process", "main"]


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
    variants = [check_omit("resume_in_fresh_process", v) for v in variants]
    if not variants:
        raise ValueError("resume_in_fresh_process: need at least one variant")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"resume_in_fresh_process: no checkpoint at {path.name}")
    read_checkpoint("resume_in_fresh_process", path)  # a damaged file fails here, plainly
    with tempfile.TemporaryDirectory(prefix="resumed-") as folder:  # one per call: no races
        out = Path(folder) / "resumed.pt"
        # this package's __main__ (its name, not a string: the face imports this module)
        cmd = [sys.executable, "-m", __package__, str(path), str(steps), str(out)]
        cmd += [",".join(v) or "-" for v in variants]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise RuntimeError(
                f"resume_in_fresh_process: child failed ({done.returncode}):\n{tail}"
            )
        return torch.load(out, weights_only=False)


def main(argv: Sequence[str] | None = None) -> None:
    """The child of :func:`resume_in_fresh_process`: resume, train, save each variant's state."""
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
