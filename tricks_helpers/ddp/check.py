"""What a DDP run is checked against, and reading its results (introduced in chapter 08).

- :func:`train_reference`: the run of :mod:`tricks_helpers.ddp.training_run`, simulated in ONE
  process on the same global batches (same samplers, same per-rank augmentation generators):
  DDP must give its parameters, up to float rounding;
- :func:`train_data_parallel`: the same run through ``nn.DataParallel`` (the design DDP
  replaces; on a machine without CUDA, DataParallel calls the module itself);
- :func:`load_results` and :func:`slowest_epoch_seconds`: the per-rank results a launch wrote,
  checked file by file, and the epoch times of the rank that sets the pace.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data.distributed import DistributedSampler

from tricks_helpers._checks import check_int, check_type
from tricks_helpers.ddp.training_run import RunConfig, make_dataset, make_model

__all__ = ["train_reference", "train_data_parallel", "load_results", "slowest_epoch_seconds"]


def _train_one_process(
    where: str, cfg: RunConfig, world_size: int, data_parallel: bool
) -> tuple[nn.Module, list[float], list[float]]:
    """The loop of :func:`train_reference` and :func:`train_data_parallel`."""
    check_type(where, "cfg", cfg, RunConfig)
    world_size = check_int(where, "world_size", world_size, minimum=1)
    micro = cfg.steps_per_epoch(world_size)
    device = torch.device("cuda" if data_parallel and torch.cuda.is_available() else "cpu")
    torch.manual_seed(cfg.seed)
    model = make_model(cfg).to(device)
    net = model
    if data_parallel:  # one GPU per rank of the DDP run, as far as there are GPUs; CPU: none
        gpus = min(world_size, torch.cuda.device_count())
        net = nn.DataParallel(model, device_ids=list(range(gpus)) if gpus else None)
    data = make_dataset(cfg)
    samplers = [
        DistributedSampler(
            data, num_replicas=world_size, rank=r, shuffle=True, seed=cfg.seed, drop_last=True
        )
        for r in range(world_size)
    ]
    augs = [torch.Generator().manual_seed(cfg.seed + 1 + r) for r in range(world_size)]
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    losses, epoch_seconds, b = [], [], cfg.batch_size
    for epoch in range(cfg.epochs):
        if cfg.set_epoch:
            for s in samplers:
                s.set_epoch(epoch)
        orders = [list(s) for s in samplers]
        start = time.perf_counter()
        for i in range(micro):
            xs, ys = [], []
            for r in range(world_size):
                idx = orders[r][i * b : (i + 1) * b]
                noise = torch.randn((b, cfg.features), generator=augs[r])
                xs.append(data.X[idx] + cfg.noise * noise)
                ys.append(data.y[idx])
            x, y = torch.cat(xs).to(device), torch.cat(ys).to(device)
            loss = F.cross_entropy(net(x), y) / cfg.accum
            loss.backward()
            losses.append(loss.item() * cfg.accum)
            if (i + 1) % cfg.accum == 0:
                opt.step()
                opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        epoch_seconds.append(time.perf_counter() - start)
    return model.cpu(), losses, epoch_seconds


def train_reference(cfg: RunConfig, world_size: int) -> tuple[nn.Module, list[float]]:
    """Train ``cfg`` in ONE process on the global batches a ``world_size``-rank DDP run uses.

    Each step concatenates the batch every rank would read (same samplers, same per-rank
    augmentation generators) and takes the mean loss over the global batch: the mean of the
    ranks' mean losses, which is what DDP's averaged gradients descend. Runs on the CPU.

    Returns:
        The trained model (on CPU) and the global loss per micro-step.

    Raises:
        TypeError: ``cfg`` is not a :class:`RunConfig` or ``world_size`` not an integer.
        ValueError: ``world_size < 1`` or batches per epoch not a multiple of ``accum``.
    """
    model, losses, _ = _train_one_process("train_reference", cfg, world_size, False)
    return model, losses


def train_data_parallel(
    cfg: RunConfig, world_size: int
) -> tuple[nn.Module, list[float], list[float]]:
    """Train ``cfg`` like :func:`train_reference`, through ``nn.DataParallel``.

    With CUDA, the model lives on the first GPU and ``nn.DataParallel`` splits every global
    batch over ``min(world_size, GPUs)`` GPUs (one per rank of the DDP run), running the
    replicas in threads of this one process and gathering the outputs on the first GPU (the
    design DDP replaces). Without CUDA,
    ``DataParallel`` has no devices and its forward calls the module itself, so the result
    is :func:`train_reference`'s, bitwise.

    Returns:
        The trained module (unwrapped, moved to the CPU), the global loss per micro-step,
        and the seconds of each epoch (synchronised with the GPU).

    Raises:
        TypeError, ValueError: as :func:`train_reference`.
    """
    return _train_one_process("train_data_parallel", cfg, world_size, True)


def load_results(out_dir: str | os.PathLike, name: str, world_size: int) -> list[dict[str, Any]]:
    """Read the per-rank JSON results of run ``name``, ordered by rank.

    Every file is checked: valid JSON, an object, written for run ``name``, by the rank its
    name says, in a run of ``world_size`` ranks. Errors name the file.

    Raises:
        TypeError: on arguments of the wrong type.
        ValueError: ``world_size < 1``, or a file that fails a check above (damaged,
            truncated, or copied from another run or rank).
        FileNotFoundError: a rank's file is missing (that rank failed or never ran ``name``).
    """
    check_type("load_results", "out_dir", out_dir, (str, os.PathLike))
    check_type("load_results", "name", name, str)
    world_size = check_int("load_results", "world_size", world_size, minimum=1)
    out_dir = Path(out_dir)
    results = []
    for r in range(world_size):
        path = out_dir / f"{name}.rank{r}.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"load_results: no results of run {name!r} for rank {r} (expected {path})"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
            raise ValueError(
                f"load_results: {path} is not valid JSON ({reason}): damaged, or "
                f"its writer was killed"
            ) from None
        if not isinstance(data, dict):
            raise ValueError(
                f"load_results: {path} is not a results object (a JSON object "
                f"written by ddp.write_result), got {type(data).__name__}"
            )
        for key, expected, what in (
            ("name", name, "run"),
            ("rank", r, "rank"),
            ("world_size", world_size, "world size"),
        ):
            if data.get(key) != expected:
                raise ValueError(
                    f"load_results: {path} holds {what} {data.get(key)!r}, "
                    f"expected {what} {expected!r}"
                )
        results.append(data)
    return results


def slowest_epoch_seconds(rank_results: Sequence[dict[str, Any]], skip: int = 1) -> list[float]:
    """Seconds of each epoch on the slowest rank (the one that sets the pace), for timing.

    Args:
        rank_results: the per-rank results of one run (:func:`load_results`).
        skip: leading epochs to drop (warm-up: allocator, first communication).

    Raises:
        TypeError: on a ``skip`` that is not an integer.
        ValueError: no results, ranks that ran different numbers of epochs, or nothing left
            after ``skip``.
    """
    skip = check_int("slowest_epoch_seconds", "skip", skip, minimum=0)
    per_rank = [list(r["epoch_seconds"]) for r in rank_results]
    if not per_rank or len({len(t) for t in per_rank}) != 1 or len(per_rank[0]) <= skip:
        raise ValueError(
            f"slowest_epoch_seconds: need the results of one run, every rank with "
            f"the same number of epochs (more than skip={skip}); got "
            f"{[len(t) for t in per_rank]} epochs per rank"
        )
    return [max(ts) for ts in zip(*per_rank)][skip:]
