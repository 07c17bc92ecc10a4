"""Helpers behind the executable handbook "PyTorch Tricks, executed".

Each submodule has one job and is introduced by one chapter of the book:

- :mod:`tricks_helpers.env`: the environment card every chapter prints, what the CPU is, bf16
  support (all; a face over `card`, `cpu`, `precision`).
- :mod:`tricks_helpers.bench`: timing and side-by-side comparisons (all): a face over
  :mod:`~tricks_helpers.bench.clock` (where timed work runs, one synchronised timing),
  :mod:`~tricks_helpers.bench.timing` (one function, several in rounds),
  :mod:`~tricks_helpers.bench.pairs` (a baseline and a trick side by side),
  :mod:`~tricks_helpers.bench.verdicts` (the threshold, the verdict, the number formats),
  :mod:`~tricks_helpers.bench.comparisons` (what was timed, and its printed lines) and
  :mod:`~tricks_helpers.bench.tables` (comparisons, and measured rows, as one aligned table).
- :mod:`tricks_helpers.counting`: invariant partners of speed claims: FLOPs, operator counts.
- :mod:`tricks_helpers.claims`: advice as claims this run decides, each with its condition and
  what decided it, printed as the chapter's claims table (all): a face over
  :mod:`~tricks_helpers.claims.claim` (one claim, its statuses, its record),
  :mod:`~tricks_helpers.claims.deciding` (verdicts, counts, trends, absent conditions) and
  :mod:`~tricks_helpers.claims.table` (a chapter's claims, the table, the tip's clause);
  :mod:`tricks_helpers.quoting`: advice quoted as the tip names it (standard library only, so
  the workshop's claims audit shares it without importing torch).
- :mod:`tricks_helpers.charts`: the speed-up-with-interval chart (04-07, the results page) and
  the roofline (04, 07): a face over :mod:`~tricks_helpers.charts.speedup`,
  :mod:`~tricks_helpers.charts.roofline` and :mod:`~tricks_helpers.charts.fit` (labels cut to fit).
- :mod:`tricks_helpers.limits`: this machine's memory bandwidth and matmul throughput per dtype,
  measured once within a time budget (04, 07): a face over :mod:`~tricks_helpers.limits.probes`
  (the cache, copy, matmul and ``Linear`` probes), :mod:`~tricks_helpers.limits.roofs` (the
  :class:`Limits` value: its lines, record, raising) and :mod:`~tricks_helpers.limits.machine`
  (one set per machine: measured, or recorded and handed by the runner).
- :mod:`tricks_helpers.cores`: pin a process to cores and set torch's threads together (03, 09).
- :mod:`tricks_helpers.fields`: what a record, a claim and a skipped-section line may hold,
  checked where they are made (the results schema is built from it) (all).
- :mod:`tricks_helpers.notebook`: output hygiene: warnings and logs without machine paths,
  expected errors in one line (all).
- :mod:`tricks_helpers.seeding`: seeding and ``seed_worker`` (01): a face over
  :mod:`~tricks_helpers.seeding.seeds` (seeds, ``seed_worker``),
  :mod:`~tricks_helpers.seeding.rng_walk` (the RNG objects an object holds) and
  :mod:`~tricks_helpers.seeding.audit` (the worker-seeding audit).
- :mod:`tricks_helpers.determinism`: deterministic settings, RNG snapshots, reproducibility
  checks (02); :mod:`tricks_helpers.bitwise`: bit-for-bit comparison of results (02).
- :mod:`tricks_helpers.resume`: a checkpoint that resumes a run bit for bit, in a fresh
  process, and what each left-out part breaks (02; a face over `tiny_run`, `sampler`,
  `checkpoint`, `fresh_process`); its file format (a checksummed payload,
  written atomically) is :mod:`tricks_helpers._checkpoint_file`, read and written through
  :mod:`tricks_helpers._io` (a reader that never blocks, refuses what is not a regular file
  and bounds its size; unique temporary names for every atomic write).
- :mod:`tricks_helpers.training`: the digits data, a deterministic MLP, a seeded step loop,
  accuracy (02, 04-07, 10).
- :mod:`tricks_helpers.storage`, :mod:`tricks_helpers.imagedata`: storage formats and a
  synthetic image data set (03).
- :mod:`tricks_helpers.memory`: bytes saved for backward, training-state and state_dict
  sizes, peaks (05, 07, 10): a face over :mod:`~tricks_helpers.memory.sizes` (exact byte counts)
  and :mod:`~tricks_helpers.memory.peaks` (CUDA and CPU peaks while a call runs).
- :mod:`tricks_helpers.quantization`: a transformer MLP block, and why a quantized model is
  (or is not) faster: weight bytes, matmul FLOPs, the kernels that ran, which torchao each
  section needs (07; a face over `weights`, `matmul_kernels`, `torchao_sections`).
- :mod:`tricks_helpers.fusion`, :mod:`tricks_helpers.reparam`: conv+BN fusion and RepVGG
  re-parameterization (06).
- :mod:`tricks_helpers.resnet`: a ResNet-18-shaped network, written out, no download (06).
- :mod:`tricks_helpers.kernels`: what runs below the ATen operators: the code Inductor
  generates, the oneDNN primitives a call executes (06).
- :mod:`tricks_helpers.compiling`: what ``torch.compile`` does to a training step: cold start
  vs steady state, graphs compiled per shape, graph breaks (06).
- :mod:`tricks_helpers.ddp`: distributed data parallel from a notebook (08): a face over
  :mod:`~tricks_helpers.ddp.running` and :mod:`~tricks_helpers.ddp.cli` (torchrun from a
  notebook), :mod:`~tricks_helpers.ddp.ranks` (the one entry point every rank runs) and
  :mod:`~tricks_helpers.ddp.common` (what its jobs share), :mod:`~tricks_helpers.ddp.training_run`
  and :mod:`~tricks_helpers.ddp.check` (the DDP training run and what it is checked against),
  :mod:`~tricks_helpers.ddp.worker_seeding` (DataLoader worker streams across ranks) and
  :mod:`~tricks_helpers.ddp.shard` (FSDP2 ``fully_shard`` beside DDP, bytes per rank).
- :mod:`tricks_helpers.profiling`: profiler results as plain data (09);
  :mod:`tricks_helpers.traces`: the trace file it exports, read back as counts and a timeline (09).
- :mod:`tricks_helpers.traffic`: bytes read and written by ATen operators, the memory access
  cost behind ShuffleNetV2's guidelines (10).
- :mod:`tricks_helpers.threads`: thread counts seen by new processes and DataLoader workers;
  :mod:`tricks_helpers.syncs`: host reads (device-to-host syncs) counted per step (10).
- :mod:`tricks_helpers.backend_flags`: cuDNN flags set for one block and restored (02, 06);
  :mod:`tricks_helpers.gpu_checks`: invariants deciding GPU-only claims (copies overlapped,
  tensor-core kernels, the cuBLAS workspace check) (02-05); :mod:`tricks_helpers.prefetch`:
  the CUDA-stream batch prefetcher (03).

All modules follow one exception policy (see :mod:`tricks_helpers._checks`): a wrong type raises
``TypeError``, a wrong value ``ValueError``.

A topic that outgrew one file is a subpackage whose ``__init__`` (its face) hands on the names
of its modules; every public name has one home, and no module re-exports a sibling's names
(``tests/test_package_layout.py`` checks it, and that the imports form no loop). The package
is what the chapters import: every module above is reached from a chapter's imports (the same
test checks it). The book's workshop, which runs the notebooks and writes ``results/*.json``
(the runner, the results files, the results page), lives in the repository's ``scripts/`` and
never ships to a reader.

Importing this package, or any submodule, changes no global state: no seeding, no
backend flags, no warnings filters. Import the submodules explicitly, e.g.
``from tricks_helpers import bench``.
"""

__version__ = "0.2.0"
