"""Probe every public name of ``tricks_helpers.storage`` with odd inputs (issue 24).

Each case runs in a forked child process (so a signal or a hang cannot take the probe down)
with a fresh scratch folder, and is classed by what happened:

- ``correct``: it returned, and the result is right (the case says what right is);
- ``clear error``: it raised a documented type (TypeError, ValueError, IndexError,
  FileExistsError, StorageError and its subclasses) whose message names the function, the
  argument or the store;
- ``obscure``: it raised anything else, or a documented type with a raw message;
- ``silent wrong``: it returned where it should have refused, or returned a wrong result;
- ``crash``: the child died by a signal; ``hang``: it ran past the time limit.

The cases: :mod:`scripts.probes.storage_writes` (``write``), :mod:`scripts.probes.storage_reads`
(the readers, datasets and memmaps), :mod:`scripts.probes.storage_untrusted` (issue 32's
untrusted files), built on :mod:`scripts.probes.storage_stores`; each runs through
:mod:`scripts.probes.harness`.

Run: ``python -m scripts.probes.storage [label filter]`` (one line per case, then the counts;
exit status 1 when any case is silent wrong, a crash or a hang). :func:`probe` returns the rows.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scripts.probes.harness import classify_outcome, probe_command
from scripts.probes.storage_reads import read_cases
from scripts.probes.storage_untrusted import untrusted_file_cases
from scripts.probes.storage_writes import write_cases
from tricks_helpers import storage

_DOCUMENTED = (TypeError, ValueError, IndexError, FileExistsError, storage.StorageError)
_CONTEXT = (
    "write",
    "read_all",
    "verify",
    "info",
    "recover",
    "Store",
    "InMemoryStore",
    "Memmap",
    "set_epoch",
    "store",
    "record",
    "index",
    "key",
    "path",
    "format",
)
classify = partial(classify_outcome, documented=_DOCUMENTED, context=_CONTEXT)


def cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """``(label, call(tmp), expect)``: ``expect`` is ERROR or a check of the result."""
    return write_cases() + read_cases() + untrusted_file_cases()


#: ``probe(timeout=30.0, only=None)``: the rows; ``main(argv)``: the command (harness).
probe, main = probe_command(cases, classify, timeout=30.0, width=45)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
