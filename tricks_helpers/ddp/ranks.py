"""The one entry point every rank of a chapter 08 launch runs: ``python -m tricks_helpers.ddp``.

Run it under torchrun (from a notebook: :func:`tricks_helpers.ddp.run_torchrun` with
``module=True``)::

    torchrun --standalone --nproc-per-node 2 -m tricks_helpers.ddp JOB --out DIR [options]

One job per launch, each a function every rank calls in the initialised process group:

- ``train`` (``--variant NAME[:key=value,...]``, repeatable; ``--backend``):
  :func:`tricks_helpers.ddp.training_run.train` per variant, NCCL with one GPU per process
  where CUDA has enough GPUs, else gloo;
- ``shard`` (``--variant`` of :data:`~tricks_helpers.ddp.shard.SHARD_VARIANTS`; ``--rounds``,
  ``--steps``): :func:`tricks_helpers.ddp.shard.run_variants` on gloo;
- ``seeding`` (``--seeding`` of :data:`~tricks_helpers.ddp.worker_seeding.SEEDINGS`;
  ``--mp-context``, ``--workers``, ``--epochs``, ``--seed``):
  :func:`tricks_helpers.ddp.worker_seeding.run_rank` per seeding, on gloo.

What every job shares is written once here: ``--out`` must be an existing directory, the
process must run under torchrun (``RANK`` set), the process group is initialised before the
job and destroyed after it (a barrier first, so that no rank leaves while another still
writes), and each job writes its per-rank results through
:func:`tricks_helpers.ddp.common.write_result`. Every option is checked before the process
group starts, so a wrong command line fails on every rank with a usage message.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.distributed as dist

from tricks_helpers.ddp.shard import SHARD_VARIANTS, run_variants
from tricks_helpers.ddp.training_run import parse_run, train
from tricks_helpers.ddp.worker_seeding import SEEDINGS, run_rank
from tricks_helpers.determinism import enable_determinism

__all__ = ["JOBS", "main"]

#: Job name -> what it runs on every rank.
JOBS = {
    "train": "DDP training runs (--variant NAME[:key=value,...])",
    "shard": "DDP variants and FSDP2 fully_shard (--variant NAME)",
    "seeding": "DataLoader worker streams per seeding (--seeding NAME)",
}

_PROG = "python -m tricks_helpers.ddp"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG, description="Run one job on this rank of a torchrun launch."
    )
    jobs = parser.add_subparsers(dest="job", required=True, metavar="JOB")
    subs = {name: jobs.add_parser(name, help=text, description=text) for name, text in JOBS.items()}
    for sub in subs.values():
        sub.add_argument("--out", required=True, help="existing directory for the results")
    subs["train"].add_argument(
        "--variant",
        action="append",
        required=True,
        metavar="NAME[:key=value,...]",
        help="a run to train (repeatable); keys are RunConfig fields",
    )
    subs["train"].add_argument("--backend", default="auto", choices=["auto", "gloo", "nccl"])
    subs["shard"].add_argument(
        "--variant", action="append", required=True, choices=list(SHARD_VARIANTS)
    )
    subs["shard"].add_argument("--rounds", type=int, default=9)
    subs["shard"].add_argument("--steps", type=int, default=5)
    seeding = subs["seeding"]
    seeding.add_argument("--seeding", action="append", required=True, choices=list(SEEDINGS))
    seeding.add_argument(
        "--mp-context", required=True, choices=multiprocessing.get_all_start_methods()
    )
    seeding.add_argument("--workers", type=int, default=2)
    seeding.add_argument("--epochs", type=int, default=2)
    seeding.add_argument("--seed", type=int, default=0)
    return parser


def _choose_backend(requested: str) -> str:
    if requested != "auto":
        return requested
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if torch.cuda.is_available() and torch.cuda.device_count() >= local_world:
        return "nccl"
    return "gloo"


def _train_job(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, Callable]:
    runs = [parse_run(spec) for spec in args.variant]
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        parser.error(f"--variant: names must be unique, got {names}")
    backend = _choose_backend(args.backend)
    if backend == "nccl":
        enable_determinism(warn_only=True)  # before the first CUDA work (cuBLAS, torch < 2.10)
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))

    def job(out: Path) -> None:
        for cfg in runs:
            train(cfg, out)

    return backend, job


def _shard_job(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, Callable]:
    names = list(dict.fromkeys(args.variant))

    def job(out: Path) -> None:
        run_variants(names, out, rounds=args.rounds, steps=args.steps)

    return "gloo", job


def _seeding_job(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, Callable]:
    def job(out: Path) -> None:
        for seeding in dict.fromkeys(args.seeding):
            run_rank(
                seeding,
                out,
                multiprocessing_context=args.mp_context,
                seed=args.seed,
                epochs=args.epochs,
                num_workers=args.workers,
            )

    return "gloo", job


_JOBS = {"train": _train_job, "shard": _shard_job, "seeding": _seeding_job}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one job on this rank of a torchrun launch (see the module docstring).

    Exits through ``argparse`` (status 2, a usage message) outside torchrun, on a ``--out``
    that is not a directory, or on a bad option; raises what the job raises (a
    ``ValueError`` for a configuration it refuses, e.g. ``accum`` not dividing the batches).

    Returns:
        0 once every rank has finished the job.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if "RANK" not in os.environ:
        parser.error(
            f"run me under torchrun (RANK is not set), e.g. torchrun --standalone "
            f"--nproc-per-node 2 -m tricks_helpers.ddp {args.job} --out DIR ..."
        )
    out = Path(args.out)
    if not out.is_dir():
        parser.error(f"--out: no such directory: {args.out}")
    backend, job = _JOBS[args.job](parser, args)
    dist.init_process_group(backend)
    try:
        job(out)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0
