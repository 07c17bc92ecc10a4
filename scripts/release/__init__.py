"""Publishing and upkeep: the PDF, the Colab cell, the lock file, the release check.

Entry points (``python -m scripts.release.<tool>``):

- ``pdf``                 print the whole book as one PDF (``make pdf``)
- ``colab_cell``          stamp the Colab set-up cell and badge into every chapter (``make colab``)
- ``colab_runtime``       GPU-runtime metadata for chapters with a CUDA branch (``make colab``)
- ``lock``                regenerate ``constraints.txt`` (``make lock``)
- ``release_check``       a release is consistent before it is tagged (``make release-check``)
- ``convert_markers``     nbval comment markers become cell tags (``make markers``)
- ``deprecation_canary``  what in the book will break on the next torch (``make canary``)

Libraries: ``pip_reason`` (why pip failed, shown by the Colab cell), ``issue_chooser``
(a Sphinx extension, loaded by ``_config.yml``).
Shell: ``install_chromium.sh`` (``make browser-deps``).
"""
