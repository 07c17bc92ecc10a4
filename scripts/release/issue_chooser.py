"""Sphinx extension: the site's issues button opens the issue template chooser.

sphinx-book-theme's issues button (``html.use_issues_button`` in ``_config.yml``) links to
``<repository.url>/issues/new?title=...``, a blank issue that bypasses the templates in
``.github/ISSUE_TEMPLATE/`` ("A claim is wrong on my machine", "Colab failed", and the issue
form "My machine's survey"). This extension,
loaded through ``sphinx.local_extensions`` in ``_config.yml``, points that button at
``<repository.url>/issues/new/choose`` on every page instead. It runs after the theme has made
its buttons (``html-page-context``, priority 502 > the theme's 501) and changes nothing else.
"""

from __future__ import annotations

from typing import Any

#: The theme's label of its issues button.
ISSUES_LABEL = "source-issues-button"


def chooser_url(repository_url: str) -> str:
    """``<repository_url>/issues/new/choose`` (a trailing slash on the url is dropped).

    Raises:
        ValueError: the url is not a GitHub repository's.
    """
    url = repository_url.rstrip("/")
    if not url.startswith("https://github.com/") or url.count("/") != 4:
        raise ValueError(f"not a GitHub repository url: {repository_url!r}")
    return f"{url}/issues/new/choose"


def point_at_chooser(buttons: list[dict[str, Any]], url: str) -> int:
    """Set the url of every issues button in ``buttons`` (groups included); returns how many."""
    changed = 0
    for button in buttons:
        if button.get("label") == ISSUES_LABEL:
            button["url"] = url
            changed += 1
        changed += point_at_chooser(button.get("buttons", []), url)
    return changed


def _on_page(app, pagename, templatename, context, doctree) -> None:
    repo = app.config.html_theme_options.get("repository_url")
    if repo and context.get("header_buttons"):
        point_at_chooser(context["header_buttons"], chooser_url(repo))


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", _on_page, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
