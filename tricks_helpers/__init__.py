"""Helpers behind the executable handbook "PyTorch Tricks, executed".

Each submodule has one job and is introduced by one chapter of the book:

- :mod:`tricks_helpers.env`: the environment card every chapter prints (all chapters).
- :mod:`tricks_helpers.bench`: timing and side-by-side comparisons with verdicts (all chapters).
- :mod:`tricks_helpers.notebook`: output hygiene for notebooks (warnings without machine paths).
- :mod:`tricks_helpers.seeding`: seeding, ``seed_worker`` and the worker-seeding audit (01).
- :mod:`tricks_helpers.determinism`: deterministic settings, RNG snapshots, bitwise checks (02).
- :mod:`tricks_helpers.storage`, :mod:`tricks_helpers.imagedata`: storage formats and a
  synthetic image data set (03).
- :mod:`tricks_helpers.amp`, :mod:`tricks_helpers.models`: mixed-precision plumbing and small
  deterministic models (04, 05).
- :mod:`tricks_helpers.memory`: bytes saved for backward, CUDA peak memory (05).
- :mod:`tricks_helpers.fusion`, :mod:`tricks_helpers.reparam`: conv+BN fusion and RepVGG
  re-parameterization (06).
- :mod:`tricks_helpers.quant`: quantization plumbing: sizes, accuracy (07).
- :mod:`tricks_helpers.launch`, :mod:`tricks_helpers.ddp_train`: torchrun from a notebook and
  the DDP training script (08).
- :mod:`tricks_helpers.profiling`: profiler results as plain data (09).

Importing this package, or any submodule, changes no global state: no seeding, no
backend flags, no warnings filters. Import the submodules explicitly, e.g.
``from tricks_helpers import bench``.
"""

__version__ = "0.1.0"
