"""The line that says why ``pip install`` failed, from pip's own output (the Colab set-up cell).

:func:`pip_reason`'s source is copied into the Colab set-up cell by
``scripts/release/colab_cell.py`` (Colab has no helpers installed yet when the cell runs), so it
uses the standard library only and is tested here, once.
"""

from __future__ import annotations


def pip_reason(output: str) -> str:
    """The most specific line of a failed ``pip install``'s output.

    pip wraps a failing subprocess (``git checkout`` of a missing tag, a build) in generic lines
    (``error: subprocess-exited-with-error``, ``× ... did not run successfully.``,
    ``╰─> See above for output.``, ``note: ...``); the reason is the line before them, such as
    ``error: pathspec 'v9' did not match any file(s) known to git`` or ``fatal: unable to
    access ...``. Returned: the first ``fatal:``/``error:``/``ERROR:`` line that is not generic;
    else the ``×`` summary line; else the last line that is not generic; else ``"nothing"``.
    """
    generic = (
        "error: subprocess-exited-with-error",
        "│",
        "╰─>",
        "note:",
        "hint:",
        "[end of output]",
        "Running command",
        "WARNING:",
        "ERROR: Failed to build",
        "ERROR: Failed building",
    )
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    specific = [x for x in lines if not x.startswith(generic)]
    for line in specific:
        if line.lower().startswith(("fatal:", "error:")):
            return line
    summary = [x.lstrip("× ").strip() for x in specific if x.startswith("×")]
    rest = [x for x in specific if not x.startswith("×")]
    return next(iter(summary), None) or (rest[-1] if rest else "nothing")
