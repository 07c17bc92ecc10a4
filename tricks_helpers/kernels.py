"""What runs below the ATen operators: compiled code and oneDNN primitives (chapter 06).

Invariant partners for speed claims that ATen operator counts cannot see:

- :func:`compiled_code` calls a ``torch.compile``'d function and captures the Python wrapper
  code that Inductor generates (or loads from its cache) for it during that call. The
  returned :class:`GeneratedCode` counts the compiled graphs, the kernels Inductor generated
  (``cpp_fused_*`` on CPU, ``triton_*`` on GPU; their names list the ATen operators they fuse)
  and the calls to library kernels (``extern_kernels.convolution``,
  ``mkldnn._convolution_pointwise``...). For a given torch version, model, input shape and
  Inductor configuration these counts are deterministic.
- :func:`onednn_primitives` runs a call with oneDNN's verbose mode on and counts the oneDNN
  primitives it executed on the CPU (``convolution``, ``reorder``...): a ``reorder`` is a copy
  of a tensor into another memory layout, the cost that ``channels_last`` and Inductor's
  weight prepacking remove. Which primitives oneDNN picks depends on the CPU's instruction
  set: print these counts as machine facts, assert only relations between them.

Both rely on internals that may change between torch versions (Inductor's
``GraphLowering.save_output_code`` hook, the layout of the generated wrapper, oneDNN's verbose
format); the unit tests pin them for the torch version of ``requirements.txt``. Neither changes
global state after it returns.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from unittest import mock

import torch

from tricks_helpers._checks import check_callable, check_type

__all__ = ["GeneratedCode", "compiled_code", "onednn_primitives"]

_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.\w+\(", re.M)
_EXTERN_CALL = re.compile(
    r"^[ \t]+(?:\w+ = )?(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(", re.M
)


@dataclass(frozen=True)
class GeneratedCode:
    """The wrapper modules Inductor produced for the graphs compiled during one call.

    Attributes:
        sources: one Python source per compiled graph, in compilation order.
    """

    sources: tuple[str, ...]

    @property
    def graphs(self) -> int:
        """Number of graphs compiled (1 when the whole call was captured in one graph)."""
        return len(self.sources)

    @property
    def kernels(self) -> tuple[str, ...]:
        """Names of the kernels Inductor generated, e.g. ``cpp_fused_add_relu_3``."""
        return tuple(name for src in self.sources for name in _KERNEL_DEF.findall(src))

    @property
    def extern_calls(self) -> collections.Counter[str]:
        """Calls to library kernels, e.g. ``{"extern_kernels.convolution": 20}``.

        ``torch.ops.`` prefixes and ``.default`` overloads are dropped from the names
        (``torch.ops.mkldnn._convolution_pointwise.default`` counts as
        ``mkldnn._convolution_pointwise``; its ``.binary`` overload keeps its suffix).
        """
        counts: collections.Counter[str] = collections.Counter()
        for src in self.sources:
            for name in _EXTERN_CALL.findall(src):
                name = name.removeprefix("torch.ops.").removesuffix(".default")
                counts[name] += 1
        return counts

    def kernels_fusing(self, op: str) -> int:
        """How many generated kernels have ``op`` in their name (e.g. ``"batch_norm"``)."""
        check_type("kernels_fusing", "op", op, str)
        return sum(op in name for name in self.kernels)


def compiled_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, GeneratedCode]:
    """Call ``fn(*args, **kwargs)`` and capture the code Inductor compiles during the call.

    Use it on the **first** call of a freshly ``torch.compile``'d function or module (or a
    call with new shapes, which recompiles): code is captured when a graph is compiled or
    loaded from Inductor's on-disk cache, not when already compiled code merely runs. Unlike
    ``torch._inductor.utils.run_and_get_code`` it does not reset ``torch._dynamo``, so other
    compiled functions keep their compiled code.

    Args:
        fn: the compiled callable.
        args, kwargs: its arguments.

    Returns:
        ``(output, GeneratedCode)``.

    Raises:
        TypeError: on a non-callable ``fn``.
        ValueError: when no graph was compiled during the call (``fn`` was compiled already,
            is not compiled with the Inductor backend, or fell back to eager).
    """
    check_callable("compiled_code", "fn", fn)
    from torch._inductor.graph import GraphLowering

    sources: list[str] = []
    with mock.patch.object(GraphLowering, "save_output_code", sources.append):
        out = fn(*args, **kwargs)
    if not sources:
        raise ValueError(
            "compiled_code: nothing was compiled during the call; call it on the "
            "first call of a fresh torch.compile(...) (Inductor backend), not on "
            "a function that is already compiled"
        )
    return out, GeneratedCode(tuple(dict.fromkeys(sources)))


@contextlib.contextmanager
def _stdout_fd_to(path_fd: int):
    """Point file descriptor 1 at ``path_fd`` inside the block (C-level printf output)."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    os.dup2(path_fd, 1)
    try:
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)


def onednn_primitives(
    fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> collections.Counter[str]:
    """Count the oneDNN primitives executed on the CPU while ``fn(*args, **kwargs)`` runs.

    Call it after a warm-up call: oneDNN's verbose mode reports primitive *creation* on a
    first call too, but only executions (``exec`` lines) are counted. The verbose lines are
    written by C code to file descriptor 1, which is redirected to a temporary file for the
    duration of the call and restored afterwards, so nothing is printed.

    Args:
        fn: the call to observe.
        args, kwargs: its arguments.

    Returns:
        A :class:`collections.Counter` of primitive kind -> executions, e.g.
        ``{"convolution": 20, "reorder": 59}`` (empty when nothing ran through oneDNN).

    Raises:
        TypeError: on a non-callable ``fn``.
        RuntimeError: when this torch build has no oneDNN (``torch.backends.mkldnn``), or on a
            platform without POSIX file descriptors and a C library (Windows).
    """
    check_callable("onednn_primitives", "fn", fn)
    if not torch.backends.mkldnn.is_available():
        raise RuntimeError("onednn_primitives: this torch build has no oneDNN (mkldnn)")
    if sys.platform.startswith("win"):
        raise RuntimeError("onednn_primitives: needs POSIX file descriptors (Linux, macOS)")
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        with _stdout_fd_to(tmp.fileno()):
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                fn(*args, **kwargs)
        tmp.seek(0)
        text = tmp.read().decode("utf-8", errors="replace")
    counts: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        fields = line.split(",")
        if fields[0] not in ("onednn_verbose", "dnnl_verbose") or "exec" not in fields[:6]:
            continue
        i = fields.index("exec")
        if len(fields) > i + 2:  # exec,<engine>,<primitive kind>,...
            counts[fields[i + 2]] += 1
    return counts
