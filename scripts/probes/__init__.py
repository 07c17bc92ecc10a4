"""Odd inputs thrown at the package's public names, each case in a child process, classified.

Entry points (``python -m scripts.probes.<tool>``):

- ``api``      every public callable of ``tricks_helpers``
- ``storage``  every public name of ``tricks_helpers.storage`` (issue 24); its cases are
               ``storage_writes``, ``storage_reads``, ``storage_untrusted`` on ``storage_stores``
- ``inputs``   resume, compiling, syncs and limits with bad inputs (issue 32)
- ``records``  records, claims, skipped lines, checkpoints, results files, the runner's early
  checks and ``python -m tricks_helpers.ddp`` with bad inputs (issue 42); its cases are
  ``records_fields``, ``records_files`` and ``records_runner``

Library: ``harness`` (a case in a forked child with a time limit, classed; the command line).
"""
