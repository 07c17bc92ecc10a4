"""What every rank job of chapter 08 shares: its results file and its all-reduce counter.

- :func:`write_result`: a rank's results of one run as ``<out_dir>/<name>.rank<r>.json``, the
  file :func:`tricks_helpers.ddp.check.load_results` reads back and checks; written whole or
  not at all (:func:`write_json`: a temporary file, then a rename), so a reader never sees
  half a file;
- :class:`AllReduceCounter`: a DDP communication hook that counts the buckets all-reduced and
  then runs the default all-reduce (mean), the invariant partner of the chapter's timings.

Used by :mod:`~tricks_helpers.ddp.training_run`, :mod:`~tricks_helpers.ddp.shard` and
:mod:`~tricks_helpers.ddp.worker_seeding`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tricks_helpers._checks import check_int, check_type
from tricks_helpers._io import write_atomic

__all__ = ["write_json", "write_result", "AllReduceCounter"]


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` whole or not at all (a unique temporary file beside
    it, then a rename).

    Raises:
        TypeError: ``path`` is not a str or path-like object, or ``data`` is not JSON
            serialisable (nothing is written then).
    """
    check_type("write_json", "path", path, (str, os.PathLike))
    path = Path(path)
    text = json.dumps(data, indent=1)  # raises before any file exists
    write_atomic(path, text.encode("utf-8"))  # a unique temporary: no writer loses its write


def write_result(out_dir: str | os.PathLike, result: dict[str, Any]) -> Path:
    """Write one rank's results of one run to ``<out_dir>/<name>.rank<rank>.json``.

    The name and rank come from the result itself (its ``"name"`` and ``"rank"`` keys), the
    ones :func:`tricks_helpers.ddp.check.load_results` checks file by file.

    Returns:
        The path written.

    Raises:
        TypeError: ``out_dir`` is not a path, ``result`` not a dict, or its name or rank of
            the wrong type.
        ValueError: ``out_dir`` is not a directory, or ``result`` lacks ``"name"`` or
            ``"rank"``, or its rank is negative.
    """
    check_type("write_result", "out_dir", out_dir, (str, os.PathLike))
    check_type("write_result", "result", result, dict)
    missing = [k for k in ("name", "rank") if k not in result]
    if missing:
        raise ValueError(f"write_result: result has no {' or '.join(map(repr, missing))}")
    name = result["name"]
    check_type("write_result", "result['name']", name, str)
    rank = check_int("write_result", "result['rank']", result["rank"], minimum=0)
    if not Path(out_dir).is_dir():
        raise ValueError(f"write_result: out_dir: no such directory: {os.fspath(out_dir)!r}")
    path = Path(out_dir) / f"{name}.rank{rank}.json"
    write_json(path, result)
    return path


class AllReduceCounter:
    """DDP communication hook: counts the buckets all-reduced, then all-reduces (mean).

    Register it with ``ddp.register_comm_hook(counter, AllReduceCounter.hook)``; ``calls``
    then counts the buckets this rank all-reduced.
    """

    def __init__(self) -> None:
        self.calls = 0

    @staticmethod
    def hook(state, bucket):  # no annotations: DDP checks them, and this module defers them
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        state.calls += 1
        return default_hooks.allreduce_hook(None, bucket)
