"""The book's chapters as files and as runs.

Entry points (``python -m scripts.book.<tool>``):

- ``run_notebooks``  the one runner: ``make execute``, ``survey``, ``survey-compare``, ``compat``

Libraries:

- ``find_notebooks``   the one rule for finding pages and chapters (``_toc.yml``) and ``ROOT``
- ``notebook_cells``   reading a stored notebook's cells (text, outputs, tags, first error)
- ``notebook_run``     executing one notebook in memory (the runner's executor)
- ``chapter_run``      one chapter's run in every mode: its kernel's environment, its records
                       and claims read back, its outcome
- ``machine_records``  one results file per machine: its facts and its records

Not imported: ``shapes_threads.py`` is the IPython start-up file ``make shapes`` installs.
"""
