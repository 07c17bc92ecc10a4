"""Odd inputs thrown at the package's public names, each case in a child process, classified.

Entry points (``python -m scripts.probes.<tool>``):

- ``api``      every public callable of ``tricks_helpers``
- ``storage``  every public name of ``tricks_helpers.storage`` (issue 24)
- ``inputs``   resume, compiling, syncs and limits with bad inputs (issue 32)
"""
