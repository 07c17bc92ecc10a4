"""``make compat``: every chapter under another torch release, one line each, a record per release;
``make wheelhouse`` and ``make gpu-run``: the book on a GPU host that brings its own torch.

Entry points (``python -m scripts.compat.<tool>``):

- ``env``          the torchao requirement of a compat venv (any ``python3``, imports nothing)
- ``torchao_api``  record which names and keywords chapter 07 uses each torchao wheel has
- ``wheelhouse``   the wheels a GPU host's torch image lacks, for another Python and platform
- ``gpu_run``      on the GPU host: offline install, nbval + CUDA tests + survey in parallel

Libraries: ``release_lines`` (the sanitize file plus the lines naming the torch release),
``run`` (the runner's compat mode), ``outcome`` (a chapter's line from its executed
notebook), ``records`` (``results/compat/torch-<release>.json`` on disk), ``schema`` (their schema).
Data: ``torchao_api.json``.
"""
