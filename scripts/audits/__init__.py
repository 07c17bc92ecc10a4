"""What ``make audit`` checks in the stored notebooks, without running them.

Entry points (``python -m scripts.audits.<tool>``):

- ``notebooks``     the audit itself: every rule over every chapter (``make audit``)
- ``import_graph``  the import graphs of ``tricks_helpers`` and ``scripts`` (floors, loops)

Libraries (rules of ``notebooks``): ``claims`` (claims table, claims in the tip, roof bound),
``recipes`` (recipe cell plain and first, evidence folded), ``device_branches`` (one output
per device).
"""
