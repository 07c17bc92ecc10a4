"""scripts/release/pip_reason.py: the line that says why pip failed, as the Colab cell shows it."""

from __future__ import annotations

import pytest

from scripts.release.pip_reason import (
    pip_reason,  # scripts/ is on pytest's pythonpath (pyproject.toml)
)

#: What `pip install -q "tricks_helpers[book] @ git+<url>@v0.1.0"` printed when the tag was
#: missing: git's line first, then pip's generic wrapper, which ends in "See above for output."
MISSING_TAG = """\
  WARNING: Did not find branch or tag 'v0.1.0', assuming revision or ref.
  error: pathspec 'v0.1.0' did not match any file(s) known to git
  error: subprocess-exited-with-error

  × git checkout -q v0.1.0 did not run successfully.
  │ exit code: 1
  ╰─> See above for output.

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× git checkout -q v0.1.0 did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
"""

NO_NETWORK = """\
  error: subprocess-exited-with-error
  fatal: unable to access 'https://github.com/me/book/': Could not resolve host: github.com
note: This error originates from a subprocess, and is likely not a problem with pip.
"""

NO_DISTRIBUTION = """\
ERROR: Could not find a version that satisfies the requirement torchao<0.19,>=0.18 (from versions: 0.13.0)
ERROR: No matching distribution found for torchao<0.19,>=0.18
"""  # noqa: E501  (pip's line, verbatim)


def test_missing_tag_shows_gits_pathspec_line_not_see_above():
    assert pip_reason(MISSING_TAG) == (
        "error: pathspec 'v0.1.0' did not match any file(s) known to git"
    )


def test_network_failure_shows_fatal_line():
    assert pip_reason(NO_NETWORK).startswith("fatal: unable to access 'https://github.com/me/")


def test_missing_distribution_shows_the_first_error():
    assert pip_reason(NO_DISTRIBUTION).startswith("ERROR: Could not find a version that satisfies")


@pytest.mark.parametrize(
    "output, expected",
    [
        (
            "× git clone did not run successfully.\n│ exit code: 128\n╰─> See above for output.\n",
            "git clone did not run successfully.",
        ),
        ("something odd happened\nnote: a note\n", "something odd happened"),
        ("", "nothing"),
        ("note: only notes\n╰─> See above for output.\n", "nothing"),
    ],
)
def test_fallbacks_skip_pips_generic_lines(output, expected):
    assert pip_reason(output) == expected
