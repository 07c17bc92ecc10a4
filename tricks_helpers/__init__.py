"""Helpers behind the executable handbook "PyTorch Tricks, executed".

Each submodule has one job and is introduced by one chapter of the book:

- :mod:`tricks_helpers.env`: the environment card every chapter prints (all chapters).
- :mod:`tricks_helpers.bench`: timing and side-by-side comparisons with verdicts (all chapters).
- :mod:`tricks_helpers.notebook`: output hygiene for notebooks (warnings without machine paths).

Importing this package, or any submodule, changes no global state: no seeding, no
backend flags, no warnings filters. Import the submodules explicitly, e.g.
``from tricks_helpers import bench``.
"""

__version__ = "0.1.0"
