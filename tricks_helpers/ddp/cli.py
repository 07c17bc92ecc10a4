"""Build a ``torchrun`` command line, checked before anything starts (chapter 08).

:func:`torchrun_command` returns the argv list for a single-node launch (``--standalone``: a
local rendezvous on a free port) or a multi-node one (``--nnodes``, ``--rdzv-*``: the same
command on every node). :func:`tricks_helpers.ddp.run_torchrun` runs the same command;
:mod:`tricks_helpers.ddp` hands :func:`torchrun_command` on.
"""

from __future__ import annotations

import numbers
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from tricks_helpers._checks import check_bool, check_int, check_type

__all__ = ["torchrun_command"]

_NNODES = re.compile(r"^(\d+)(?::(\d+))?$")


def _check_args(where: str, args: Any) -> list[str]:
    """Script arguments as strings: str, path-like objects and numbers are accepted."""
    if isinstance(args, (str, bytes)):
        raise TypeError(
            f"{where}: args must be a sequence of strings, not one string "
            f"(split it: {str(args).split()!r})"
        )
    check_type(where, "args", args, Sequence)
    out = []
    for i, a in enumerate(args):
        if isinstance(a, (str, os.PathLike)):
            out.append(os.fspath(a))
        elif isinstance(a, numbers.Real) and not isinstance(a, bool):
            out.append(str(a))
        else:
            raise TypeError(
                f"{where}: args[{i}] must be a string, a path or a number, got "
                f"{type(a).__name__} {a!r}"
            )
    return out


def _check_nnodes(where: str, nnodes: Any) -> str:
    """``nnodes`` as torchrun wants it: ``"N"`` or an elastic range ``"MIN:MAX"``."""
    if isinstance(nnodes, str):
        m = _NNODES.match(nnodes)
        low = int(m.group(1)) if m else 0
        high = int(m.group(2)) if m and m.group(2) else low
        if not m or low < 1 or high < low:
            raise ValueError(
                f"{where}: nnodes must be an integer >= 1 or a range 'MIN:MAX' "
                f"with 1 <= MIN <= MAX, got {nnodes!r}"
            )
        return nnodes
    if isinstance(nnodes, bool) or not isinstance(nnodes, numbers.Integral):
        raise TypeError(
            f"{where}: nnodes must be an integer or a 'MIN:MAX' string, got "
            f"{type(nnodes).__name__} {nnodes!r}"
        )
    if nnodes < 1:
        raise ValueError(f"{where}: nnodes must be an integer >= 1, got {nnodes!r}")
    return str(int(nnodes))


def build_command(
    where: str,
    target: Any,
    args: Any,
    *,
    nproc_per_node: Any,
    module: Any,
    nnodes: Any,
    rdzv_endpoint: Any,
    rdzv_id: Any,
    rdzv_backend: Any,
    launcher: Any,
) -> list[str]:
    """:func:`torchrun_command` for a caller named ``where`` in error messages."""
    check_type(where, "target", target, (str, os.PathLike))
    target = os.fspath(target)
    if not isinstance(target, str):
        raise TypeError(f"{where}: target must be a str path, got a {type(target).__name__} one")
    if not target.strip():
        raise ValueError(f"{where}: target must be a non-empty script path or module")
    script_args = _check_args(where, args)
    check_int(where, "nproc_per_node", nproc_per_node, minimum=1)
    check_bool(where, "module", module)
    check_type(where, "rdzv_backend", rdzv_backend, str)
    if not rdzv_backend.strip():
        raise ValueError(f"{where}: rdzv_backend must be a non-empty name such as 'c10d'")
    for name, value in (("rdzv_endpoint", rdzv_endpoint), ("rdzv_id", rdzv_id)):
        if value is not None:
            check_type(where, name, value, str)
    if launcher is None:
        cmd = [sys.executable, "-m", "torch.distributed.run"]
    else:
        if isinstance(launcher, (str, bytes)):
            raise TypeError(
                f"{where}: launcher must be a sequence of strings such as "
                f"[{launcher!r}], not one string"
            )
        check_type(where, "launcher", launcher, Sequence)
        if len(launcher) == 0:
            raise ValueError(
                f"{where}: launcher must not be empty (default: this Python's "
                f"torch.distributed.run)"
            )
        for i, part in enumerate(launcher):
            check_type(where, f"launcher[{i}]", part, str)
        cmd = list(launcher)
    if nnodes is None:
        cmd += ["--standalone"]
    else:
        nodes = _check_nnodes(where, nnodes)
        if not rdzv_endpoint or not rdzv_id:
            raise ValueError(
                f"{where}: a multi-node launch (nnodes) needs rdzv_endpoint "
                "('host:port') and rdzv_id (a job id shared by all nodes)"
            )
        cmd += [
            "--nnodes",
            nodes,
            "--rdzv-backend",
            rdzv_backend,
            "--rdzv-endpoint",
            rdzv_endpoint,
            "--rdzv-id",
            rdzv_id,
        ]
    cmd += ["--nproc-per-node", str(int(nproc_per_node))]
    cmd += ["-m", target] if module else [target]
    return cmd + script_args


def torchrun_command(
    target: str | os.PathLike,
    args: Sequence[str] = (),
    *,
    nproc_per_node: int = 2,
    module: bool = False,
    nnodes: int | str | None = None,
    rdzv_endpoint: str | None = None,
    rdzv_id: str | None = None,
    rdzv_backend: str = "c10d",
    launcher: Sequence[str] | None = None,
) -> list[str]:
    """Build a torchrun command line.

    Single node (``nnodes`` is ``None``): ``--standalone``, which starts a local rendezvous
    on a free port. Several nodes: ``--nnodes``, ``--rdzv-backend``, ``--rdzv-endpoint``
    and ``--rdzv-id``; the same command is run on every node.

    Args:
        target: a script path, or a module name when ``module`` is true.
        args: arguments passed to the script.
        nproc_per_node: worker processes per node (one per GPU on GPU machines).
        module: run ``target`` as ``python -m target``.
        nnodes: number of nodes, e.g. ``2`` or an elastic range ``"1:4"`` given as str.
        rdzv_endpoint: ``host:port`` of the rendezvous (required with ``nnodes``).
        rdzv_id: a job id shared by all nodes of one job (required with ``nnodes``).
        rdzv_backend: rendezvous backend (``c10d`` needs no extra service).
        launcher: the launcher's argv prefix; default
            ``[sys.executable, "-m", "torch.distributed.run"]`` (``["torchrun"]`` to print).

    Returns:
        The command as a list of strings.

    Raises:
        TypeError: on an argument of the wrong type, e.g. ``args`` or ``launcher`` given as
            one string (``launcher="torchrun"``: write ``["torchrun"]``).
        ValueError: on an empty target or launcher, a process or node count below 1, or a
            multi-node launch without endpoint or id.
    """
    return build_command(
        "torchrun_command",
        target,
        args,
        nproc_per_node=nproc_per_node,
        module=module,
        nnodes=nnodes,
        rdzv_endpoint=rdzv_endpoint,
        rdzv_id=rdzv_id,
        rdzv_backend=rdzv_backend,
        launcher=launcher,
    )
