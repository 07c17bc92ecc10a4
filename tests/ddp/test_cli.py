"""Tests of tricks_helpers.ddp.cli: the torchrun command line, checked before anything starts."""

from __future__ import annotations

import sys

import pytest

from tricks_helpers import ddp


def test_torchrun_command_single_node():
    cmd = ddp.torchrun_command("train.py", ["--epochs", 3], nproc_per_node=4, launcher=["torchrun"])
    assert cmd == ["torchrun", "--standalone", "--nproc-per-node", "4", "train.py", "--epochs", "3"]
    cmd = ddp.torchrun_command("pkg.mod", module=True, launcher=["torchrun"])
    assert cmd[-2:] == ["-m", "pkg.mod"]
    assert ddp.torchrun_command("x.py")[:3] == [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_command_multi_node():
    cmd = ddp.torchrun_command(
        "pkg.mod",
        module=True,
        nnodes=2,
        nproc_per_node=8,
        rdzv_endpoint="node0:29400",
        rdzv_id="job7",
        launcher=["torchrun"],
    )
    assert "--standalone" not in cmd
    assert cmd[1:9] == [
        "--nnodes",
        "2",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "node0:29400",
        "--rdzv-id",
        "job7",
    ]
    elastic = ddp.torchrun_command(
        "m", module=True, nnodes="1:4", rdzv_endpoint="h:1", rdzv_id="j", launcher=["torchrun"]
    )
    assert elastic[1:3] == ["--nnodes", "1:4"]


def test_torchrun_command_launcher_string_is_refused_not_split():
    """A launcher given as one string used to become ['t', 'o', 'r', 'c', 'h', ...]."""
    with pytest.raises(TypeError, match=r"launcher must be a sequence of strings.*\['torchrun'\]"):
        ddp.torchrun_command("x.py", launcher="torchrun")
    cmd = ddp.torchrun_command("x.py", launcher=("torchrun",))
    assert cmd[:2] == ["torchrun", "--standalone"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(target=""), "non-empty"),
        (dict(target="x.py", nproc_per_node=0), "nproc_per_node must be an integer >= 1"),
        (dict(target="x.py", nnodes=2), "rdzv_endpoint"),
        (dict(target="x.py", nnodes=0, rdzv_endpoint="h:1", rdzv_id="j"), "nnodes must be"),
        (dict(target="x.py", nnodes="two", rdzv_endpoint="h:1", rdzv_id="j"), "nnodes must be"),
        (dict(target="x.py", nnodes="4:1", rdzv_endpoint="h:1", rdzv_id="j"), "nnodes must be"),
        (dict(target="x.py", launcher=[]), "launcher must not be empty"),
        (dict(target="x.py", rdzv_backend=""), "rdzv_backend"),
    ],
)
def test_torchrun_command_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ddp.torchrun_command(**kwargs)


class _BytesPath:
    """A path-like object whose path is bytes."""

    def __fspath__(self) -> bytes:
        return b"x.py"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(target=3), "target must be str or PathLike"),
        (dict(target=_BytesPath()), "target must be a str path"),
        (dict(target="x.py", args="--epochs 3"), "args must be a sequence of strings"),
        (dict(target="x.py", args=["--epochs", None]), r"args\[1\] must be"),
        (dict(target="x.py", nproc_per_node=2.0), "nproc_per_node must be an integer"),
        (dict(target="x.py", nproc_per_node=True), "nproc_per_node must be an integer"),
        (dict(target="x.py", module="yes"), "module must be True or False"),
        (dict(target="x.py", nnodes=2.5, rdzv_endpoint="h:1", rdzv_id="j"), "nnodes must be"),
        (
            dict(target="x.py", nnodes=2, rdzv_endpoint=29400, rdzv_id="j"),
            "rdzv_endpoint must be str",
        ),
        (dict(target="x.py", launcher=["torchrun", 3]), r"launcher\[1\] must be str"),
    ],
)
def test_torchrun_command_type_errors(kwargs, match):
    with pytest.raises(TypeError, match=match):
        ddp.torchrun_command(**kwargs)
