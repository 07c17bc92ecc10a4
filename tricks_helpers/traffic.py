"""Memory traffic of ATen operators: the bytes a call reads and writes (introduced in chapter 10).

FLOPs say how much arithmetic a call does; they do not say how many bytes it moves, and on
many machines the bytes decide the time. ShuffleNetV2's guidelines (Ma et al., 2018) are
stated in terms of *memory access cost* (MAC): at equal FLOPs, a layer that touches fewer
bytes runs faster when it is memory-bound. This module counts those bytes with PyTorch's own
dispatcher, so a chapter can assert them exactly, next to a measured verdict:

- :func:`bytes_accessed` runs a call under the one dispatcher counter of
  :mod:`tricks_helpers.counting` (a ``TorchDispatchMode``) and adds up, for every ATen
  operator that reaches the dispatcher, the bytes of its tensor arguments (read) and of the
  tensors it returns (written);
- :func:`bytes_by_op` gives the same total split by operator name.

The model is the one of the ShuffleNetV2 paper: every operator reads each tensor argument once
and writes each result once. Caches, re-reads inside a kernel (a convolution reading its input
several times) and fusion are not modelled, so the number is a property of the graph (shapes,
dtypes, operators), identical on every machine and device for a given torch version, not a
measurement of the hardware. Rules, stated so that they can be checked:

- a tensor counts ``numel() * element_size()`` bytes (the elements it views, not its storage);
- operators that only create a view or alias (``aten.view``, ``aten.t``, ``aten.detach``...,
  those whose schema returns an alias) count 0 bytes, since they move no data;
- operators that only allocate (``aten.empty``, ``aten.empty_strided``, ``aten.empty_like``)
  count 0 bytes;
- a tensor argument an operator mutates in place (``aten.relu_``, ``aten._foreach_mul_``) is
  counted as read and as written; an ``out=`` argument only as written; a result that is an
  alias of an argument (what in-place ops return) is not counted again.

Both functions run the call once, under ``torch.no_grad()`` unless told otherwise, and leave
no mode or hook installed afterwards, even when the call raises.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from tricks_helpers._checks import check_bool, check_callable
from tricks_helpers.counting import count_by_op

__all__ = ["bytes_accessed", "bytes_by_op"]

_ALLOCATION_ONLY = frozenset(
    {
        "aten.empty",
        "aten.empty_strided",
        "aten.empty_like",
        "aten.new_empty",
        "aten.new_empty_strided",
    }
)


def _tensor_bytes(values: Any) -> int:
    leaves, _ = tree_flatten(values)
    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


def _moves_no_data(func: Any) -> bool:
    if str(func.overloadpacket) in _ALLOCATION_ONLY:
        return True
    returns = func._schema.returns
    return bool(returns) and any(
        r.alias_info is not None and not r.alias_info.is_write for r in returns
    )


def _op_bytes(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    """Bytes read and written by one call of ``func`` (see the module docstring)."""
    moved = 0
    for i, arg in enumerate(func._schema.arguments):
        if arg.kwarg_only or i >= len(args):
            if arg.name not in kwargs:
                continue
            value = kwargs[arg.name]
        else:
            value = args[i]
        nbytes = _tensor_bytes(value)
        mutated = arg.alias_info is not None and arg.alias_info.is_write
        is_out = mutated and arg.name.startswith("out")
        moved += (0 if is_out else nbytes) + (nbytes if mutated else 0)
    results = out if isinstance(out, (tuple, list)) else (out,)
    for r, value in zip(func._schema.returns, results):
        if r.alias_info is None:
            moved += _tensor_bytes(value)
    return moved


def _traffic(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int | None:
    """What one call adds to :func:`bytes_by_op`: its bytes, or None when it moves no data."""
    return None if _moves_no_data(func) else _op_bytes(func, args, kwargs, out)


def bytes_by_op(
    fn: Callable[..., Any], *args: Any, grad: bool = False, **kwargs: Any
) -> collections.Counter[str]:
    """Bytes read plus bytes written by each ATen operator while ``fn(*args, **kwargs)`` runs.

    Keys are operator packets without overload, e.g. ``"aten.convolution"``, ``"aten.relu"``;
    operators that move no data (views, aliases, bare allocations) are left out.

    Args:
        fn: the call to count (a module or any callable).
        grad: run with autograd enabled (count a backward by calling it inside ``fn``).

    Returns:
        A :class:`collections.Counter` of operator name -> bytes (``int``).

    Raises:
        TypeError: on a non-callable ``fn`` or a non-bool ``grad``.
    """
    return count_by_op("bytes_by_op", fn, args, kwargs, grad=grad, weigh=_traffic)


def bytes_accessed(fn: Callable[..., Any], *args: Any, grad: bool = False, **kwargs: Any) -> int:
    """Total bytes read and written by the ATen operators of ``fn(*args, **kwargs)``.

    The memory access cost of the ShuffleNetV2 paper, counted by the dispatcher (see the
    module docstring for the exact rules). For a 1x1 convolution of a ``(n, c1, h, w)`` input
    to ``c2`` channels without bias it is ``4 * (n*h*w*c1 + c1*c2 + n*h*w*c2)`` bytes in
    float32: input, weight and output once each.

    Args:
        fn: the call to count (a module or any callable).
        grad: run with autograd enabled (count a backward by calling it inside ``fn``).

    Returns:
        The number of bytes, an ``int``, identical on every machine for the same graph.

    Raises:
        TypeError: on a non-callable ``fn`` or a non-bool ``grad``.
    """
    check_callable("bytes_accessed", "fn", fn)
    check_bool("bytes_accessed", "grad", grad)
    return sum(bytes_by_op(fn, *args, grad=grad, **kwargs).values())
