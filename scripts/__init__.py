"""The book's workshop: everything that runs, checks, publishes or probes the book, beside the
``tricks_helpers`` package the chapters import (nothing here is imported by a chapter).

Six families, each a package with its own face (read its ``__init__`` first):

- ``book``     the chapters as files and as runs: finding them, reading stored cells, the one
               runner (``make book``, ``make try``, ``make survey``) and the results files it writes
- ``results``  the results page (``make results``): its rows, machines, claims, compat table, and
               the one schema a results file is checked against
- ``audits``   what ``make audit`` checks in the stored notebooks, and the package's import graph
- ``compat``   ``make compat``: a chapter under another torch release, its record and schema
- ``probes``   odd inputs thrown at the package's public names (issues 24 and 32)
- ``release``  PDF, Colab cell and runtime, lock file, release check, marker conversion, the
               deprecation canary, the site's issue chooser

An entry point runs as ``python -m scripts.<family>.<tool>`` from the repository root (the make
targets do that); a library is imported by its package path (``from scripts.results import
schema``). No module here edits ``sys.path``.
"""
