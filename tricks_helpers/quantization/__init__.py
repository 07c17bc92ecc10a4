"""Why a quantized model is (or is not) faster, as invariants (introduced in chapter 07).

A latency verdict is a measurement; what explains it does not change from machine to machine:

- :func:`transformer_mlp`: the feed-forward block of a transformer,
  ``Linear(h, 4h) -> GELU -> Linear(4h, h)``, the Linear-heavy model int8 is made for;
- :func:`weight_bytes`: the bytes of the tensors a model holds (weights, biases, scales, zero
  points), counting the int8/int4 payloads inside quantized tensor subclasses and legacy
  packed parameters: what one forward pass must read at least once;
- :func:`payload`: the integer data inside a quantized weight, whichever tensor subclass a
  torchao release wraps it in;
- :func:`matmul_flops`: the floating-point *and integer* matrix-multiply operations of a call,
  counted by :class:`torch.utils.flop_counter.FlopCounterMode`, which knows ``aten.mm`` and
  ``aten.addmm`` but not the quantized kernels; they are added here through its
  ``custom_mapping``, so the counts show that quantization keeps the multiply-adds and
  changes the kernel that does them;
- :data:`TORCHAO_NEEDED`, :func:`torchao_supports`, :func:`torchao_needs` and
  :func:`require_torchao`: which sections of chapter 07 need which torchao release, decided
  section by section before an import fails deep inside torchao;
- :func:`profiled_kernels`: the matrix-multiply kernels that actually ran, read from
  :mod:`torch.profiler` events (this sees inside ``torch.compile``-d graphs, which
  ``FlopCounterMode`` does not), and :func:`kernel_kind` to say whether each is a float,
  int8 or int4 kernel.

Nothing here changes global state: the counting modes and the profiler are active only
during the call.

A face: :mod:`~tricks_helpers.quantization.weights` (the block, its bytes, a weight's payload),
:mod:`~tricks_helpers.quantization.matmul_kernels` (operations counted, kernels profiled) and
:mod:`~tricks_helpers.quantization.torchao_sections` (which torchao each section needs).
"""

from __future__ import annotations

from tricks_helpers.quantization.matmul_kernels import (
    FLOAT_KERNELS,
    INT4_KERNELS,
    INT8_KERNELS,
    kernel_kind,
    matmul_flops,
    profiled_kernels,
)
from tricks_helpers.quantization.torchao_sections import (
    TORCHAO_NEEDED,
    require_torchao,
    torchao_needs,
    torchao_supports,
)
from tricks_helpers.quantization.weights import payload, transformer_mlp, weight_bytes

__all__ = [
    "transformer_mlp",
    "weight_bytes",
    "payload",
    "matmul_flops",
    "profiled_kernels",
    "kernel_kind",
    "INT8_KERNELS",
    "INT4_KERNELS",
    "FLOAT_KERNELS",
    "TORCHAO_NEEDED",
    "torchao_supports",
    "torchao_needs",
    "require_torchao",
]
