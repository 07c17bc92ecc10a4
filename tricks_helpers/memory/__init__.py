"""Counting memory: saved activations, peaks, training state (introduced in chapter 05).

This face hands on the names of two modules, each name with one home:
:mod:`~tricks_helpers.memory.sizes` (exact byte counts) and :mod:`~tricks_helpers.memory.peaks`
(peaks measured while a call runs).

Guarantees:

- :func:`saved_activation_bytes` counts, exactly and on any device, the bytes of the tensors
  autograd saves for the backward pass while ``fn`` runs, by observing every saved tensor
  through :func:`torch.autograd.graph.saved_tensors_hooks`. Tensors that share storage
  (views of one tensor, a tensor saved by two ops, an in-place result) are counted once;
  what is counted is the size of the underlying storage, because that is what stays alive.
  The number depends only on shapes, dtypes and the graph, not on timing or the device, so a
  notebook can print it exactly and nbval compares it.
  Meta tensors (no memory, only shapes) are counted at the size their storage would have, so
  a model built on ``device="meta"`` can be sized without allocating it.
- :func:`peak_cuda_bytes`, :func:`cpu_memory_report` and :func:`peak_cpu_bytes` measure peaks
  while ``fn`` runs (:mod:`~tricks_helpers.memory.peaks`);
- :func:`grad_bytes`, :func:`tensor_bytes`, :func:`optimizer_state_bytes` and
  :func:`training_state_bytes` add up bytes of tensors you already hold (parameters,
  gradients, optimizer state: the memory budget of chapter 05);
- :func:`state_dict_bytes` measures the size a model takes on disk by serialising its
  ``state_dict`` with ``torch.save`` into memory, so quantized tensors, packed parameters and
  tensor subclasses count as they would in a checkpoint file (chapters 05, 07).

Importing this module changes no global state: hooks and the profiler are active only inside
the call and removed on exit, even when ``fn`` raises.
"""

from tricks_helpers.memory.peaks import (
    CpuMemoryReport,
    cpu_memory_report,
    peak_cpu_bytes,
    peak_cuda_bytes,
)
from tricks_helpers.memory.sizes import (
    SavedTensorsReport,
    TrainingStateBytes,
    fmt_bytes,
    grad_bytes,
    optimizer_state_bytes,
    saved_activation_bytes,
    saved_tensors_report,
    state_dict_bytes,
    tensor_bytes,
    training_state_bytes,
)

__all__ = [
    "saved_activation_bytes",
    "SavedTensorsReport",
    "saved_tensors_report",
    "peak_cuda_bytes",
    "CpuMemoryReport",
    "cpu_memory_report",
    "peak_cpu_bytes",
    "grad_bytes",
    "tensor_bytes",
    "optimizer_state_bytes",
    "TrainingStateBytes",
    "training_state_bytes",
    "fmt_bytes",
    "state_dict_bytes",
]
