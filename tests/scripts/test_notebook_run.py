"""scripts/book/notebook_run.py: the one notebook executor of the runner (run_notebooks)."""

from __future__ import annotations

import os

import nbformat
import pytest

from scripts.book.notebook_run import execute_notebook, first_error


def test_first_error_names_the_code_cell_and_error():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# T"),
            nbformat.v4.new_code_cell("1"),
            nbformat.v4.new_code_cell("boom"),
        ]
    )
    assert first_error(nb) == ""
    nb.cells[2].outputs = [
        nbformat.v4.new_output(
            "error", ename="NameError", evalue="name 'boom' is not defined", traceback=[]
        )
    ]
    assert first_error(nb) == "code cell 2: NameError: name 'boom' is not defined"


def test_refuses_a_missing_notebook_and_a_bad_timeout(tmp_path, make_notebook):
    with pytest.raises(FileNotFoundError, match="no notebook"):
        execute_notebook(tmp_path / "none.ipynb")
    path = make_notebook("a.ipynb", ["# A"])
    with pytest.raises(ValueError, match="timeout must be an integer >= 1"):
        execute_notebook(path, timeout=0)
    with pytest.raises(TypeError, match="timeout must be an integer"):
        execute_notebook(path, timeout=1.5)


@pytest.mark.parametrize(
    "content, error",
    [
        (b"{not json", "unreadable notebook: NotJSONError: Notebook does not appear to be JSON"),
        (b"\xff\xfe", "unreadable notebook: UnicodeDecodeError"),
        (b'{"cells": 3}', "unreadable notebook: "),
    ],
)
def test_an_unreadable_notebook_is_an_error_not_a_crash(tmp_path, content, error):
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    done = execute_notebook(path)
    assert not done.ok and done.nb is None and done.error.startswith(error)


@pytest.mark.slow
def test_runs_in_the_notebooks_folder_with_its_env_and_never_writes(make_notebook):
    src = "import os\nprint(os.path.basename(os.getcwd()), os.environ['NB_RUN_TEST'])\n1/0"
    path = make_notebook("a.ipynb", ["# A", {"source": src, "outputs": []}])
    before = path.read_bytes()
    done = execute_notebook(path, timeout=60, env={**os.environ, "NB_RUN_TEST": "yes"})
    assert not done.ok and done.error == "code cell 1: ZeroDivisionError: division by zero"
    assert done.nb.cells[1].outputs[0]["text"] == f"{path.parent.name} yes\n"
    assert done.seconds > 0 and path.read_bytes() == before
