"""Tests of tricks_helpers.launch.cli: the torchrun command line, built and checked.

``tests/launch/test_running.py`` checks ``torchrun_command`` through the ``launch`` face; these
check the module's own rules: ``build_command`` names its caller, script arguments and node
counts are converted or refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tricks_helpers.launch import cli

DEFAULTS = dict(
    nproc_per_node=2,
    module=False,
    nnodes=None,
    rdzv_endpoint=None,
    rdzv_id=None,
    rdzv_backend="c10d",
    launcher=None,
)


def test_build_command_single_node_with_converted_arguments():
    cmd = cli.build_command("run_torchrun", Path("w.py"), ["a", Path("b"), 3, 0.5], **DEFAULTS)
    assert cmd == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "w.py",
        "a",
        "b",
        "3",
        "0.5",
    ]
    assert cli.torchrun_command("w.py") == cli.build_command("x", "w.py", (), **DEFAULTS)


@pytest.mark.parametrize(
    "nnodes, text", [(1, "1"), (3, "3"), ("2", "2"), ("1:4", "1:4"), ("2:2", "2:2")]
)
def test_node_counts_and_elastic_ranges(nnodes, text):
    assert cli._check_nnodes("w", nnodes) == text


@pytest.mark.parametrize("nnodes", [0, -1, "0", "3:2", "0:2", "a", "1:", ":2", " 2", "1.5"])
def test_node_counts_below_one_or_malformed_are_value_errors(nnodes):
    with pytest.raises(ValueError, match=r"^w: nnodes must be an integer >= 1"):
        cli._check_nnodes("w", nnodes)


@pytest.mark.parametrize("nnodes", [True, 2.0, None, [2]])
def test_node_counts_of_another_type_are_type_errors(nnodes):
    with pytest.raises(TypeError, match=r"^w: nnodes must be an integer or a 'MIN:MAX' string"):
        cli._check_nnodes("w", nnodes)


@pytest.mark.parametrize(
    "args, match",
    [
        ("--epochs 3", r"^w: args must be a sequence of strings, not one string \(split it: "),
        (b"x", "not one string"),
        ([True], r"^w: args\[0\] must be a string, a path or a number, got bool True"),
        (["ok", None], r"^w: args\[1\] must be a string, a path or a number, got NoneType"),
        (3, "args must be"),
    ],
)
def test_script_arguments_of_the_wrong_kind_are_refused(args, match):
    with pytest.raises(TypeError, match=match):
        cli._check_args("w", args)


class BytesPath:
    def __fspath__(self):
        return b"w.py"


def test_errors_name_the_caller():
    with pytest.raises(ValueError, match="^run_torchrun: target must be a non-empty"):
        cli.build_command("run_torchrun", "  ", [], **DEFAULTS)
    with pytest.raises(TypeError, match="^run_torchrun: target must be a str path, got a bytes"):
        cli.build_command("run_torchrun", BytesPath(), [], **DEFAULTS)
    with pytest.raises(ValueError, match="^run_torchrun: rdzv_backend must be a non-empty"):
        cli.build_command("run_torchrun", "w.py", [], **{**DEFAULTS, "rdzv_backend": " "})
    with pytest.raises(TypeError, match=r"^run_torchrun: launcher\[1\] must be str"):
        cli.build_command("run_torchrun", "w.py", [], **{**DEFAULTS, "launcher": ["a", 1]})
    with pytest.raises(ValueError, match="^run_torchrun: launcher must not be empty"):
        cli.build_command("run_torchrun", "w.py", [], **{**DEFAULTS, "launcher": []})
