"""Backend flags set for one block and restored after it, even when the block raises.

Chapters 02 and 06 change cuDNN settings for a measurement or a check. Set globally, such a
flag leaks into every later cell (a timing then measures a setting users do not run); these
context managers scope it to the ``with`` block:

- :func:`cudnn_benchmark` sets ``torch.backends.cudnn.benchmark`` (the autotuner);
- :func:`cudnn_conv_fp32_precision` sets ``torch.backends.cudnn.conv.fp32_precision``
  (``"ieee"``: float32 convolutions; ``"tf32"``: TensorFloat-32, cuDNN's default on Ampere and
  later), so that float32 equality checks hold on a GPU.

Both flags exist on every torch build and do nothing on the CPU (they configure cuDNN only).
Importing this module changes no global state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from tricks_helpers._checks import check_bool, check_choice, check_type

__all__ = ["cudnn_benchmark", "cudnn_conv_fp32_precision", "CONV_FP32_PRECISIONS"]

#: The values ``torch.backends.cudnn.conv.fp32_precision`` accepts.
CONV_FP32_PRECISIONS = ("none", "ieee", "tf32")


@contextlib.contextmanager
def cudnn_benchmark(enabled: bool) -> Iterator[bool]:
    """Set ``torch.backends.cudnn.benchmark`` to ``enabled`` inside the block (chapters 02, 06).

    Yields:
        The value before the block, restored on exit (also when the block raises).

    Raises:
        TypeError: on a non-bool ``enabled``.
    """
    check_bool("cudnn_benchmark", "enabled", enabled)
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = enabled
    try:
        yield before
    finally:
        torch.backends.cudnn.benchmark = before


@contextlib.contextmanager
def cudnn_conv_fp32_precision(precision: str) -> Iterator[str]:
    """Set ``torch.backends.cudnn.conv.fp32_precision`` inside the block (chapter 06).

    Args:
        precision: ``"ieee"`` (float32 convolutions), ``"tf32"`` or ``"none"`` (the default:
            follow the global setting).

    Yields:
        The value before the block, restored on exit (also when the block raises).

    Raises:
        TypeError: on a non-string ``precision``.
        ValueError: on another value.
    """
    check_type("cudnn_conv_fp32_precision", "precision", precision, str)
    check_choice("cudnn_conv_fp32_precision", "precision", precision, CONV_FP32_PRECISIONS)
    before = torch.backends.cudnn.conv.fp32_precision
    torch.backends.cudnn.conv.fp32_precision = precision
    try:
        yield before
    finally:
        torch.backends.cudnn.conv.fp32_precision = before
