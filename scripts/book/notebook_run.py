"""Execute one notebook top to bottom in memory: the one executor of the book's scripts.

``scripts/book/run_notebooks.py``, the book's one runner (which writes the notebook back in its
``book`` mode, and never in its ``try`` and ``survey`` modes), runs notebooks through
:func:`execute_notebook`: the current environment's ``python3`` kernel, started in the
notebook's own folder, with a per-cell timeout and an optional kernel environment. A failure
never raises: it comes back as :attr:`Execution.error`, one line naming the first failing code
cell (:func:`first_error`), a timeout, a kernel that died or could not start, or a notebook
file that cannot be read. Needs ``nbformat`` and ``nbclient`` (the book's environment),
imported when called.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.book.notebook_cells import error_cell
from tricks_helpers._checks import check_int

__all__ = ["Execution", "first_error", "execute_notebook"]


@dataclass(frozen=True)
class Execution:
    """What executing one notebook gave: the executed notebook, its time, its first error."""

    nb: Any  # nbformat.NotebookNode, outputs filled in as far as it ran
    seconds: float
    error: str = ""  # empty when every cell ran

    @property
    def ok(self) -> bool:
        """True when every cell ran."""
        return not self.error


def first_error(nb: Any) -> str:
    """``code cell N: Name: first line`` of the first code cell holding an error output.

    Returns:
        That line (the message cut at 160 characters), or ``""`` when no cell holds an error.
    """
    found = error_cell(nb.cells)
    if found is None:
        return ""
    number, name, first = found
    return f"code cell {number}: {name}: {first[:160]}"


def _first(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0][:160] if lines else ""


def execute_notebook(
    path: str | Path, *, timeout: int = 600, env: Mapping[str, str] | None = None
) -> Execution:
    """Execute the notebook at ``path`` in memory (the file is never written).

    Args:
        path: the notebook; its folder is the kernel's working directory.
        timeout: seconds each cell may run.
        env: the kernel's environment (default: this process's).

    Returns:
        The :class:`Execution`; a notebook that cannot be read (``nb`` is then ``None``), a
        failing cell, a timeout or a dead kernel is its ``error``.

    Raises:
        FileNotFoundError: when ``path`` does not exist; TypeError, ValueError: on a timeout
            that is not a positive integer.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    timeout = check_int("execute_notebook", "timeout", timeout, minimum=1)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"execute_notebook: no notebook {path}")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # not JSON, not a notebook, not UTF-8, not readable: its error
        return Execution(None, 0.0, f"unreadable notebook: {type(exc).__name__}: {_first(exc)}")
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    error = ""
    try:
        client.execute(**({"env": dict(env)} if env is not None else {}))
    except CellTimeoutError as exc:
        error = f"timeout after {timeout} s per cell: {str(exc).splitlines()[0]}"
    except CellExecutionError:
        error = first_error(nb) or "a cell failed"
    except Exception as exc:  # a kernel that dies or cannot start: an error line, not a crash
        error = f"{type(exc).__name__}: {_first(exc)}"
    return Execution(nb, time.perf_counter() - start, error)
