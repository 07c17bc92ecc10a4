"""Which matrix-multiply kernels a call ran, and how many operations they did (chapter 07).

:func:`matmul_flops` counts float *and integer* matrix-multiply operations with
:class:`torch.utils.flop_counter.FlopCounterMode` (the quantized kernels added through its
``custom_mapping``); :func:`profiled_kernels` reads the kernels that ran from
:mod:`torch.profiler` events (inside ``torch.compile``-d graphs too) and :func:`kernel_kind`
says whether each is a float, int8 or int4 kernel. The modes are active only during the call.
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from tricks_helpers._checks import check_callable, check_int, check_type
from tricks_helpers.memory.peaks import without_profiler_backend_lines

__all__ = [
    "INT8_KERNELS",
    "INT4_KERNELS",
    "FLOAT_KERNELS",
    "matmul_flops",
    "profiled_kernels",
    "kernel_kind",
]

#: Profiler names of int8 matrix-multiply kernels (eager and Inductor-lowered).
INT8_KERNELS = frozenset(
    {
        "aten::_int_mm",
        "quantized::linear_dynamic",
        "quantized::linear",
        "onednn::qlinear_pointwise",
        "aten::_weight_int8pack_mm",
    }
)
#: Profiler names of int4-weight matrix-multiply kernels.
INT4_KERNELS = frozenset(
    {
        "aten::_weight_int4pack_mm_for_cpu",
        "aten::_weight_int4pack_mm",
        "torchao::da8w4_linear_cpu",
    }
)
#: Profiler names of floating-point matrix-multiply kernels.
FLOAT_KERNELS = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::_addmm_activation",
        "mkl::_mkl_linear",
        "mkldnn::_linear_pointwise",
    }
)
# Composite operators that only call one of the kernels above (not counted themselves).
_COMPOSITES = frozenset({"aten::linear", "aten::matmul"})
_MATMUL_NAME = re.compile(r"mm|linear|gemm", re.IGNORECASE)


def _linear_like_flops(x_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    # (..., K) input times a (K, N) weight: 2 * M * K * N, where M * K = numel of the input.
    return 2 * math.prod(x_shape) * out_shape[-1]


def _int_mm_flops(a_shape: Any, b_shape: Any, *args: Any, **kwargs: Any) -> int:
    return 2 * a_shape[0] * a_shape[1] * b_shape[1]


def _flop_mapping() -> dict[Any, Callable[..., int]]:
    aten = torch.ops.aten
    mapping: dict[Any, Callable[..., int]] = {
        aten._int_mm: _int_mm_flops,
        aten._weight_int8pack_mm: _linear_like_flops,
        aten._weight_int4pack_mm_for_cpu: _linear_like_flops,
        torch.ops.quantized.linear_dynamic: _linear_like_flops,
    }
    return mapping


def matmul_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, int]:
    """Matrix-multiply operations of ``fn(*args, **kwargs)`` per operator, float and integer.

    Runs the call once under ``torch.no_grad()`` and
    :class:`~torch.utils.flop_counter.FlopCounterMode`, extended (``custom_mapping``) with
    formulas for ``aten._int_mm``, ``aten._weight_int8pack_mm``,
    ``aten._weight_int4pack_mm_for_cpu`` and the legacy ``quantized.linear_dynamic``: a
    multiply-add counts 2 operations whether it is done in float32, int8 or int4. A call
    that is compiled by ``torch.compile`` is not seen inside (use :func:`profiled_kernels`).

    Args:
        fn: the call to count (a module or any callable).

    Returns:
        Operator name in the profiler's spelling (e.g. ``"aten::_int_mm"``, so
        :func:`kernel_kind` applies) -> operations, sorted by name; operators with no matrix
        multiply are left out.

    Raises:
        TypeError: on a non-callable ``fn``.
    """
    check_callable("matmul_flops", "fn", fn)
    counter = FlopCounterMode(display=False, custom_mapping=_flop_mapping())
    with counter, torch.no_grad():
        fn(*args, **kwargs)
    counts = counter.get_flop_counts().get("Global", {})
    named = {str(op).replace(".", "::", 1): int(n) for op, n in counts.items() if n}
    return dict(sorted(named.items()))


def profiled_kernels(
    fn: Callable[..., Any], *args: Any, runs: int = 1, **kwargs: Any
) -> collections.Counter[str]:
    """The matrix-multiply kernels that ran during ``fn(*args, **kwargs)``, with call counts.

    The call runs ``runs`` times under ``torch.no_grad()`` and :mod:`torch.profiler` (CPU
    activity). An event counts when its name looks like a matrix multiply (``mm``,
    ``linear``, ``gemm``) and no event under it does too, so a composite such as
    ``aten::linear`` is replaced by the kernel it called (``aten::addmm``). Events of
    compiled graphs (``torch.compile``) are seen, e.g. ``onednn::qlinear_pointwise``.
    Warm the call up first: a first call that compiles runs other code.

    Args:
        fn: the call to profile.
        runs: how many calls to record (>= 1); counts are totals over them.

    Returns:
        Kernel name -> calls (see :func:`kernel_kind` for what each name is).

    Raises:
        TypeError: on a non-callable ``fn`` or a non-integer ``runs``.
        ValueError: on ``runs`` < 1.
    """
    check_callable("profiled_kernels", "fn", fn)
    runs = check_int("profiled_kernels", "runs", runs, minimum=1)
    from torch.profiler import ProfilerActivity, profile

    with (
        without_profiler_backend_lines(),
        torch.no_grad(),
        profile(activities=[ProfilerActivity.CPU]) as prof,
    ):
        for _ in range(runs):
            fn(*args, **kwargs)

    def matmul_like(event: Any) -> bool:
        return bool(_MATMUL_NAME.search(event.name)) and "::" in event.name

    def has_matmul_below(event: Any) -> bool:
        return any(matmul_like(c) or has_matmul_below(c) for c in event.cpu_children)

    counts: collections.Counter[str] = collections.Counter()
    for event in prof.events():
        if matmul_like(event) and event.name not in _COMPOSITES and not has_matmul_below(event):
            counts[event.name] += 1
    return counts


def kernel_kind(name: str) -> str:
    """``"int8"``, ``"int4"`` or ``"float"`` for a kernel name of :func:`profiled_kernels`.

    Raises:
        TypeError: on a non-string name.
        ValueError: on a name this module does not know (add it to one of the sets).
    """
    check_type("kernel_kind", "name", name, str)
    for kind, names in (("int8", INT8_KERNELS), ("int4", INT4_KERNELS), ("float", FLOAT_KERNELS)):
        if name in names:
            return kind
    raise ValueError(
        f"kernel_kind: unknown kernel {name!r}; known: "
        f"{sorted(INT8_KERNELS | INT4_KERNELS | FLOAT_KERNELS)}"
    )
