"""The results page (``book/results.md``) and the results files it reads.

Entry points (``python -m scripts.results.<tool>``):

- ``page``    generate the page and its charts (``make results``; ``--check``: is it up to date)
- ``check``   check results files as every reader does (``--contributed FILE``: a survey file)

Libraries: ``schema`` (the one schema of a results file, imported by ``book.machine_records``)
on ``validator`` (the JSON Schema plumbing it shares with ``compat.schema``); ``json_file`` (the
strict reader and atomic writer of results files and compat records); ``retired_verdict`` (the
three-verdict book's word, re-decided); and the page's parts: ``rows`` (one row per measured
comparison), ``machines`` (across machines), ``kinds`` (a machine named by what decides the
tricks, each comparison once, stale chapters; ``python -m scripts.results.kinds FILE COMMIT``
records a survey's chapter code hashes), ``overview`` (the page's first screen, add your machine,
claims and comparisons by machine), ``other_machines`` (the Sphinx extension showing them on each
chapter page), ``compat`` (chapter by torch release).
"""
