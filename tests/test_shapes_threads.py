"""Tests of scripts/book/shapes_threads.py and `make shapes` (issue 31: outputs independent of the
machine's shape: one core, and more torch threads than cores)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from scripts.book import shapes_threads


def test_threads_from_env_reads_a_positive_count():
    assert shapes_threads.threads_from_env({"TRICKS_SHAPES_THREADS": "5"}) == 5
    for bad in ({}, {"TRICKS_SHAPES_THREADS": "x"}, {"TRICKS_SHAPES_THREADS": "0"}):
        with pytest.raises(ValueError, match="TRICKS_SHAPES_THREADS must be a thread count"):
            shapes_threads.threads_from_env(bad)


def test_as_a_startup_file_it_sets_more_threads_than_cores_and_leaves_no_names(repo_root):
    """Run as IPython runs a start-up file: in __main__'s namespace."""
    wanted = 2 * (os.cpu_count() or 1) + 1
    code = (
        "import runpy, torch\n"
        f"ns = runpy.run_path({str(repo_root / 'scripts' / 'book' / 'shapes_threads.py')!r},"
        " run_name='__main__')\n"
        "print(torch.get_num_threads(), sorted(k for k in ns if not k.startswith('__')))\n"
    )
    env = {**os.environ, "TRICKS_SHAPES_THREADS": str(wanted)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split(" ", 1) == [str(wanted), "[]\n"]


def test_make_shapes_runs_nbval_on_one_core_then_with_more_threads_than_cores(repo_root):
    makefile = (repo_root / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^shapes:.*\n((?:\t.*\n)+)", makefile, flags=re.M).group(1)
    assert "taskset -c 0 $(BIN)/python -m pytest $(PYTEST_NBVAL) $(or $(NB),book)" in recipe
    assert "profile_default/startup" in recipe and "scripts/book/shapes_threads.py" in recipe
    assert "IPYTHONDIR=$(SHAPES_IPYTHON) TRICKS_SHAPES_THREADS=$(SHAPES_THREADS)" in recipe
    assert "SHAPES_THREADS ?= $(shell echo $$((2 * $$(nproc) + 1)))" in makefile
    assert "shapes" in re.search(r"^\.PHONY:(.*\n)+?\S", makefile, flags=re.M).group(0)
