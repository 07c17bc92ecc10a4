"""The Linear-heavy block int8 is made for, and the bytes a (quantized) model holds (chapter 07).

:func:`weight_bytes` counts the int8/int4 payloads inside quantized tensor subclasses and legacy
packed parameters: what one forward pass must read at least once; :func:`payload` is the integer
data inside a quantized weight, whichever tensor subclass a torchao release wraps it in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from tricks_helpers._checks import check_int, check_type

__all__ = ["transformer_mlp", "weight_bytes", "payload"]


def transformer_mlp(hidden: int, *, expansion: int = 4, seed: int = 0) -> nn.Sequential:
    """The feed-forward block of a transformer layer: ``Linear(h, e*h) -> GELU -> Linear(e*h, h)``.

    Args:
        hidden: the model width ``h`` (>= 1).
        expansion: the width factor of the inner layer (>= 1; 4 in most transformers).
        seed: the weights are drawn from ``torch.manual_seed(seed)`` inside
            :func:`torch.random.fork_rng`, so the global random state is not touched.

    Returns:
        The block in eval mode, float32, on the CPU; the same arguments give bitwise-equal
        weights on every call.

    Raises:
        TypeError: on non-integer arguments.
        ValueError: on a width or expansion < 1, or a seed outside ``[0, 2**63)``.
    """
    check_int("transformer_mlp", "hidden", hidden, minimum=1)
    check_int("transformer_mlp", "expansion", expansion, minimum=1)
    check_int("transformer_mlp", "seed", seed, minimum=0, maximum=2**63 - 1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = nn.Sequential(
            nn.Linear(hidden, expansion * hidden), nn.GELU(), nn.Linear(expansion * hidden, hidden)
        )
    return block.eval()


def _plain_tensors(value: Any) -> list[torch.Tensor]:
    """The plain tensors inside ``value``: tensor subclasses are flattened recursively."""
    if isinstance(value, torch.Tensor):
        if hasattr(value, "__tensor_flatten__") and type(value) not in (torch.Tensor, nn.Parameter):
            names, _ = value.__tensor_flatten__()
            found: list[torch.Tensor] = []
            for name in names:
                found += _plain_tensors(getattr(value, name))
            return found
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _plain_tensors(v)]
    return []


def weight_bytes(model: nn.Module | Mapping[str, Any]) -> int:
    """Bytes of the tensors in a model's ``state_dict``, each storage counted once.

    Quantized weights count at their stored size: the ``int8`` / packed ``int4`` payload and
    the scales and zero points of torchao tensor subclasses (flattened with
    ``__tensor_flatten__``), and the ``qint8`` weight of legacy ``torch.ao`` packed
    parameters (1 byte per element). Unlike :func:`tricks_helpers.memory.state_dict_bytes`
    (the serialized size), this is the in-memory size of the data, i.e. the bytes a forward
    pass that uses every weight must read at least once.

    Args:
        model: an ``nn.Module`` (its ``state_dict(keep_vars=True)`` is read) or a state_dict.

    Returns:
        The number of bytes, an ``int``. Non-tensor entries (e.g. a stored dtype) count 0.
        A model on ``device="meta"`` counts the bytes it would take (meta storages are told
        apart by identity, since all of them report address 0).

    Raises:
        TypeError: when ``model`` is neither a module nor a mapping.
    """
    if isinstance(model, nn.Module):
        state: Mapping[str, Any] = model.state_dict(keep_vars=True)
    elif isinstance(model, Mapping):
        state = model
    else:
        raise TypeError(
            f"weight_bytes: expected an nn.Module or a state_dict mapping, got "
            f"{type(model).__name__}"
        )
    seen: dict[tuple[int, int], int] = {}
    alive = []  # keep each keyed tensor alive, so a storage's identity is not reused
    for value in state.values():
        for t in _plain_tensors(value):
            nbytes = t.numel() * t.element_size()
            if t.is_quantized:  # qint8 & co: no plain untyped storage to key on
                key = (id(t), 0)
            elif t.device.type == "meta":  # every meta storage has data_ptr() == 0
                key = (t.untyped_storage()._cdata, t.storage_offset() * t.element_size())
            else:
                key = (t.untyped_storage().data_ptr(), t.storage_offset() * t.element_size())
            alive.append(t)
            seen[key] = max(seen.get(key, 0), nbytes)
    return sum(seen.values())


def payload(weight: torch.Tensor) -> torch.Tensor:
    """The integer payload of a quantized weight: its largest integer tensor inside.

    torchao releases wrap the same data differently (torchao 0.18's ``Int8Tensor`` keeps it
    as ``.qdata``; before, ``AffineQuantizedTensor`` kept it as ``.tensor_impl.int_data``):
    this reads it through ``__tensor_flatten__``, whatever the subclass, so a chapter can show
    the stored dtype and shape (``int8`` weights, or two 4-bit weights per ``uint8``) on any
    release.

    Args:
        weight: a quantized weight (a tensor subclass) or a plain tensor.

    Returns:
        The inner tensor of an integer dtype with the most elements (the weight itself when
        it is a plain integer tensor).

    Raises:
        TypeError: when ``weight`` is not a tensor.
        ValueError: when it holds no integer tensor (e.g. a float weight).
    """
    check_type("payload", "weight", weight, torch.Tensor)
    found = [
        t
        for t in _plain_tensors(weight)
        if not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool
    ]
    if not found:
        raise ValueError(
            f"payload: a {type(weight).__name__} of dtype {weight.dtype} holds no integer data"
        )
    return max(found, key=lambda t: t.numel())
