"""Plumbing for the quantization chapter (introduced in chapter 07).

- :func:`state_dict_bytes`: the size a model takes on disk, measured by actually
  serialising its ``state_dict`` with ``torch.save`` into memory (so quantized tensors,
  packed parameters and tensor subclasses count as they would in a checkpoint file);
- :func:`accuracy`: top-1 accuracy of a classifier over tensors, in batches, without grad;
- :func:`captured_logs`: records what named loggers emit inside a block instead of letting
  their handlers print it (torchao logs machine paths at import time; the chapter shows
  those messages on purpose, without the paths, rather than hiding them).

Importing this module changes no global state; :func:`captured_logs` restores every logger
it touched on exit.
"""

from __future__ import annotations

import contextlib
import io
import logging
from typing import Iterator, Mapping

import torch
from torch import nn

__all__ = ["state_dict_bytes", "accuracy", "captured_logs"]


def state_dict_bytes(obj: nn.Module | Mapping[str, object]) -> int:
    """Bytes of ``torch.save(state_dict)`` for a module or a state_dict.

    Args:
        obj: an ``nn.Module`` (its ``state_dict()`` is saved) or a state_dict mapping.

    Returns:
        The number of bytes ``torch.save`` writes (to an in-memory buffer). Deterministic
        for a given state_dict and torch version.

    Raises:
        TypeError: when ``obj`` is neither a module nor a mapping.
    """
    if isinstance(obj, nn.Module):
        state = obj.state_dict()
    elif isinstance(obj, Mapping):
        state = obj
    else:
        raise TypeError(f"state_dict_bytes: expected an nn.Module or a state_dict mapping, "
                        f"got {type(obj).__name__}")
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.tell()


def accuracy(model: nn.Module | object, X: torch.Tensor, y: torch.Tensor,
             batch_size: int | None = None) -> float:
    """Top-1 accuracy of ``model`` on ``(X, y)``, computed under ``torch.no_grad()``.

    Args:
        model: a callable returning logits of shape ``(N, classes)`` (a module, a compiled
            module, an exported graph module).
        X: inputs, first dimension ``N``.
        y: integer labels of shape ``(N,)``.
        batch_size: evaluate in batches of this size (default: all at once). Use the batch
            size a static-shape (exported) model was traced with.

    Returns:
        The fraction of correct predictions, in ``[0, 1]``.

    Raises:
        ValueError: on mismatched lengths, empty data, a non-positive ``batch_size``, or
            logits of the wrong shape.
    """
    if not callable(model):
        raise ValueError(f"accuracy: model must be callable, got {type(model).__name__}")
    if len(X) != len(y) or len(X) == 0:
        raise ValueError(f"accuracy: X and y must be non-empty and the same length, got "
                         f"{len(X)} and {len(y)}")
    if y.dim() != 1:
        raise ValueError(f"accuracy: y must be 1-D class labels, got shape {tuple(y.shape)}")
    n = len(X)
    if batch_size is None:
        batch_size = n
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"accuracy: batch_size must be a positive integer, got {batch_size!r}")
    correct = 0
    with torch.no_grad():
        for i in range(0, n, batch_size):
            logits = model(X[i:i + batch_size])
            if logits.dim() != 2 or logits.shape[0] != len(X[i:i + batch_size]):
                raise ValueError(f"accuracy: model must return logits (batch, classes), got "
                                 f"shape {tuple(logits.shape)}")
            correct += int((logits.argmax(dim=1) == y[i:i + batch_size]).sum())
    return correct / n


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(level=logging.NOTSET)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def captured_logs(*names: str) -> Iterator[list[logging.LogRecord]]:
    """Record what the loggers ``names`` (and their children) emit inside the block.

    While the block runs, each named logger sends its records to a list instead of
    propagating them to its parents' handlers (which would print them to stderr). Levels
    are not changed: only what the logger would have emitted is recorded. On exit every
    logger's handlers and ``propagate`` flag are restored.

    Args:
        names: logger names, e.g. ``"torchao"``.

    Yields:
        The list of :class:`logging.LogRecord` objects, filled as records arrive.

    Raises:
        ValueError: when no name, or an empty name (the root logger), is given.
    """
    if not names or any(not isinstance(n, str) or not n for n in names):
        raise ValueError("captured_logs: give one or more non-empty logger names "
                         "(the root logger is not captured)")
    records: list[logging.LogRecord] = []
    handler = _ListHandler(records)
    saved = []
    for name in names:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate, list(logger.handlers)))
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield records
    finally:
        for logger, propagate, handlers in saved:
            logger.handlers = handlers
            logger.propagate = propagate
