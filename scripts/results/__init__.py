"""The results page (``book/results.md``) and the results files it reads.

Entry points (``python -m scripts.results.<tool>``):

- ``page``    generate the page and its charts (``make results``; ``--check``: is it up to date)
- ``schema``  the one schema of a results file (``--contributed FILE`` checks a survey file)

Libraries (the page's parts): ``rows`` (one row per measured comparison), ``machines`` (across
machines), ``claims`` (claims by machine), ``compat`` (chapter by torch release).
"""
