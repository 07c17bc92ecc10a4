"""scripts/compat/env.py: the compat venv's torchao comes from the Colab cell's one table."""

from __future__ import annotations

import pytest

from scripts.compat import env as compat_env
from scripts.release import colab_cell


def test_the_table_is_colab_cells_own():
    assert compat_env.torchao_table() == colab_cell.TORCHAO_FOR_TORCH


@pytest.mark.parametrize("minor", sorted(colab_cell.TORCHAO_FOR_TORCH))
def test_every_row_is_what_a_release_of_that_minor_gets(minor):
    assert compat_env.torchao_requirement(f"{minor}.1+cu128") == colab_cell.TORCHAO_FOR_TORCH[minor]
    assert compat_env.has_row(f"{minor}.0")


def test_a_release_without_a_row_gets_torchao_unbounded_and_says_so(capsys):
    table = {"2.10": "torchao>=0.16,<0.17"}
    assert compat_env.torchao_requirement("2.10.0", table) == "torchao>=0.16,<0.17"
    assert compat_env.torchao_requirement("9.1.0", table) == "torchao"
    assert not compat_env.has_row("9.1.0", table)
    assert compat_env.main(["99.0.0"]) == 0
    out, err = capsys.readouterr()
    assert out == "torchao\n" and "no torchao row for torch 99.0" in err and "unbounded" in err


def test_main_prints_the_row():
    assert compat_env.main(["2.10.0"]) == 0


@pytest.mark.parametrize("bad", ["../x", "2", "2.10/..", "latest", "2.10.0\n"])
def test_refuses_what_is_not_a_release(bad, capsys):
    with pytest.raises(ValueError, match="not a torch release"):
        compat_env.torch_minor(bad)
    assert compat_env.main([bad]) == 1
    with pytest.raises(TypeError, match="must be a string"):
        compat_env.torch_minor(2.1)


def test_a_file_without_the_table_is_a_clear_error(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("OTHER = {}\n")
    with pytest.raises(ValueError, match="no TORCHAO_FOR_TORCH"):
        compat_env.torchao_table(path)
    path.write_text("TORCHAO_FOR_TORCH = {'2.1': 3}\n")
    with pytest.raises(ValueError, match="not a dict of strings"):
        compat_env.torchao_table(path)
