"""``make compat``: every chapter under another torch release, one line each, a record per release.

Entry points (``python -m scripts.compat.<tool>``):

- ``env``          the torchao requirement of a compat venv (any ``python3``, imports nothing)
- ``torchao_api``  record which names and keywords chapter 07 uses each torchao wheel has

Libraries: ``run`` (the runner's compat mode), ``outcome`` (a chapter's line from its executed
notebook), ``records`` (``results/compat/torch-<release>.json`` on disk), ``schema`` (their schema).
Data: ``torchao_api.json``.
"""
