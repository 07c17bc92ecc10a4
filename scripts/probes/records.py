"""Probe the modules of issue 42 with bad inputs: what a record, a claim, a skipped line may hold
(``tricks_helpers.fields`` and its users), the checkpoint reader, the strict JSON reader and the
results schema, the runner's early checks, ``python -m tricks_helpers.ddp`` and a deleted store.

The cases: :mod:`scripts.probes.records_fields` (records, claims, skipped lines),
:mod:`scripts.probes.records_files` (checkpoints, JSON files, stores) and
:mod:`scripts.probes.records_runner` (results files, the runner, ddp). Each case runs through
``scripts/probes/harness.py``: in a forked child with a time limit, classed ``correct``,
``clear error``, ``obscure``, ``silent wrong``, ``crash`` or ``hang``.

Run: ``python -m scripts.probes.records [label filter]`` (one line per case, then the counts;
exit status 1 when any case is silent wrong, a crash or a hang).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scripts.probes.harness import classify_outcome, probe_command
from scripts.probes.records_fields import field_cases
from scripts.probes.records_files import file_cases
from scripts.probes.records_runner import runner_cases

_DOCUMENTED = (TypeError, ValueError, OSError, RuntimeError)
_CONTEXT = (
    "validate_record",
    "Claim",
    "skipped",
    "label",
    "load_checkpoint",
    ".json",
    ".pt",
    "records",
    "ratio",
    "--",
    "share the chapter name",
    "process group",
    "one_line",
    "chapter name",
)
classify = partial(classify_outcome, documented=_DOCUMENTED, context=_CONTEXT)


def cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """``(label, call(tmp), expect)``: ``expect`` is ERROR or a check of the result."""
    return field_cases() + file_cases() + runner_cases()


#: ``probe(timeout=120.0, only=None)``: the rows; ``main(argv)``: the command (harness).
probe, main = probe_command(cases, classify, timeout=120.0, width=48)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
