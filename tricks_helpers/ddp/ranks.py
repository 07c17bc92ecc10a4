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
group starts (counts and the seed in range, a backend this host has: ``nccl`` needs a CUDA
device per local rank), so a wrong command line fails on every rank with a usage message. The
rendezvous waits at most ``--timeout`` seconds (default :data:`TIMEOUT_S`, not torch's 30
minutes) and then names the ranks it waited for.
"""

from __future__ import annotations

import argparse
import datetime
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

__all__ = ["JOBS", "TIMEOUT_S", "main"]

#: Job name -> what it runs on every rank.
JOBS = {
    "train": "DDP training runs (--variant NAME[:key=value,...])",
    "shard": "DDP variants and FSDP2 fully_shard (--variant NAME)",
    "seeding": "DataLoader worker streams per seeding (--seeding NAME)",
}

_PROG = "python -m tricks_helpers.ddp"
#: How long the rendezvous and every collective wait, by default, in seconds.
TIMEOUT_S = 300.0
_MAX_SEED = 2**63 - 1  # what torch.manual_seed and numpy's generators both take


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG, description="Run one job on this rank of a torchrun launch."
    )
    jobs = parser.add_subparsers(dest="job", required=True, metavar="JOB")
    subs = {name: jobs.add_parser(name, help=text, description=text) for name, text in JOBS.items()}
    for sub in subs.values():
        sub.add_argument("--out", required=True, help="existing directory for the results")
        sub.add_argument(
            "--timeout",
            type=float,
            default=TIMEOUT_S,
            help=f"seconds the rendezvous and each collective wait (default {TIMEOUT_S:g})",
        )
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


def _gpus_for_ranks() -> tuple[bool, str]:
    """Whether NCCL can give every local rank its own GPU here, and what this host has."""
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if not dist.is_nccl_available() or not torch.cuda.is_available():
        return False, "no CUDA device (or a torch built without NCCL)"
    count = torch.cuda.device_count()
    if count < local_world:
        return False, f"{count} CUDA device(s) for {local_world} local ranks"
    return True, f"{count} CUDA device(s)"


def _choose_backend(requested: str) -> str:
    """The backend to use; ``ValueError`` for one this host lacks."""
    if requested == "auto":
        return "nccl" if _gpus_for_ranks()[0] else "gloo"
    if requested == "nccl":
        ok, have = _gpus_for_ranks()
        if not ok:
            raise ValueError(
                f"--backend nccl needs a CUDA device per local rank; this host has {have}"
            )
    elif not dist.is_gloo_available():
        raise ValueError("--backend gloo: this torch was built without gloo")
    return requested


def _check_counts(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every numeric option in range, before the process group starts."""
    for name, low, high in (
        ("rounds", 1, 10**6),
        ("steps", 1, 10**6),
        ("workers", 1, 256),
        ("epochs", 1, 10**4),
        ("seed", 0, _MAX_SEED),
    ):
        value = getattr(args, name, None)
        if value is not None and not low <= value <= high:
            parser.error(f"--{name} must be in [{low}, {high}], got {value}")
    if not (args.timeout > 0 and args.timeout <= 24 * 3600):
        parser.error(f"--timeout must be seconds in (0, 86400], got {args.timeout}")


def _init_group(backend: str, timeout: float) -> None:
    """``init_process_group``, waiting at most ``timeout`` seconds for the other ranks."""
    rank, world = os.environ.get("RANK", "?"), os.environ.get("WORLD_SIZE", "?")
    try:
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout))
    except (RuntimeError, TimeoutError, OSError) as exc:  # a store timeout (DistStoreError)
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        raise RuntimeError(
            f"{_PROG}: rank {rank} of {world}: the process group ({backend}) did not form "
            f"within {timeout:g} s; is every rank running, with the same MASTER_ADDR:MASTER_PORT? "
            f"({type(exc).__name__}: {first})"
        ) from None


def _train_job(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, Callable]:
    runs = [parse_run(spec) for spec in args.variant]
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        parser.error(f"--variant: names must be unique, got {names}")
    try:
        backend = _choose_backend(args.backend)
    except ValueError as exc:
        parser.error(str(exc))
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
    that is not a directory, on a bad option (a count or seed out of range, ``--backend nccl``
    without a CUDA device per local rank); raises :class:`RuntimeError` when the process group
    does not form within ``--timeout`` seconds (a rank missing), and what the job raises (a
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
    _check_counts(parser, args)
    backend, job = _JOBS[args.job](parser, args)
    _init_group(backend, args.timeout)
    try:
        job(out)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0
