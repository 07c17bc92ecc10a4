"""Distributed data parallel from a notebook: launches, the rank jobs, their checks (chapter 08).

This face hands on the names of its modules, each name with one home:

- :mod:`~tricks_helpers.ddp.running` (:func:`run_torchrun`, :class:`LaunchResult` and the
  errors it raises; its guarantees) and :mod:`~tricks_helpers.ddp.cli`
  (:func:`torchrun_command`, the command line it runs): a script under ``torchrun`` from a
  notebook or a test;
- :mod:`~tricks_helpers.ddp.ranks`: the one entry point every rank runs,
  ``python -m tricks_helpers.ddp JOB --out DIR ...`` (jobs ``train``, ``shard``, ``seeding``);
  :mod:`~tricks_helpers.ddp.common`: what the jobs share (:func:`write_result`, one JSON file
  per run and rank; :class:`AllReduceCounter`, the DDP hook counting all-reduces);
- :mod:`~tricks_helpers.ddp.training_run`: the DDP training run (:class:`RunConfig`,
  :func:`train`); :mod:`~tricks_helpers.ddp.check`: what it is checked against
  (:func:`train_reference`, :func:`train_data_parallel`) and reading the results back
  (:func:`load_results`, :func:`slowest_epoch_seconds`);
- :mod:`~tricks_helpers.ddp.worker_seeding`: DataLoader worker streams repeated across ranks
  seeded alike, and the rank in the loader's generator (:func:`make_loader`,
  :func:`count_repeats`);
- :mod:`~tricks_helpers.ddp.shard`: FSDP2 ``fully_shard`` (on a CPU mesh, :func:`cpu_mesh`)
  beside DDP and its knobs, the bytes each rank holds (:func:`local_element_bytes`,
  :func:`expected_shard_bytes`).

``torch.multiprocessing.spawn`` cannot start a function defined in a notebook cell, so the
chapter launches its code the way it runs in production: ``torchrun`` on a module.
"""

from tricks_helpers.ddp.check import (
    load_results,
    slowest_epoch_seconds,
    train_data_parallel,
    train_reference,
)
from tricks_helpers.ddp.cli import torchrun_command
from tricks_helpers.ddp.common import AllReduceCounter, write_json, write_result
from tricks_helpers.ddp.ranks import JOBS, main
from tricks_helpers.ddp.running import (
    LaunchError,
    LaunchResult,
    LaunchTimeoutError,
    WorkerFailedError,
    run_torchrun,
)
from tricks_helpers.ddp.shard import (
    SHARD_VARIANTS,
    cpu_mesh,
    expected_shard_bytes,
    local_element_bytes,
    make_mlp,
    run_variants,
)
from tricks_helpers.ddp.training_run import (
    IndexedDataset,
    RunConfig,
    make_dataset,
    make_model,
    params_hash,
    parse_run,
    train,
)
from tricks_helpers.ddp.worker_seeding import (
    SEEDINGS,
    AugmentedItems,
    StreamRepeats,
    count_repeats,
    make_loader,
    record_streams,
    run_rank,
)

__all__ = [
    # launching (running, cli)
    "LaunchError",
    "WorkerFailedError",
    "LaunchTimeoutError",
    "LaunchResult",
    "torchrun_command",
    "run_torchrun",
    # the rank entry point and what its jobs share (ranks, common)
    "JOBS",
    "main",
    "write_json",
    "write_result",
    "AllReduceCounter",
    # the training run and its checks (training_run, check)
    "RunConfig",
    "IndexedDataset",
    "make_dataset",
    "make_model",
    "params_hash",
    "parse_run",
    "train",
    "train_reference",
    "train_data_parallel",
    "load_results",
    "slowest_epoch_seconds",
    # DataLoader workers across ranks (worker_seeding)
    "SEEDINGS",
    "AugmentedItems",
    "make_loader",
    "record_streams",
    "StreamRepeats",
    "count_repeats",
    "run_rank",
    # sharding (shard)
    "SHARD_VARIANTS",
    "make_mlp",
    "local_element_bytes",
    "expected_shard_bytes",
    "cpu_mesh",
    "run_variants",
]
