"""The results page (``book/results.md``) and the results files it reads.

Entry points (``python -m scripts.results.<tool>``):

- ``page``    generate the page and its charts (``make results``; ``--check``: is it up to date)
- ``check``   check results files as every reader does (``--contributed FILE``: a survey file)

Libraries: ``schema`` (the one schema of a results file, imported by ``book.machine_records``),
and the page's parts: ``rows`` (one row per measured comparison), ``machines`` (across machines),
``kinds`` (a machine named by what decides the tricks, each comparison once, stale chapters;
``python -m scripts.results.kinds FILE COMMIT`` records a survey's chapter code hashes),
``overview`` (the page's first screen, add your machine, claims and comparisons by machine),
``compat`` (chapter by torch release).
"""
