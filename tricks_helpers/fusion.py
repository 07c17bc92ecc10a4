"""Conv + BatchNorm fusion for inference (introduced in chapter 06).

In eval mode a BatchNorm layer is a fixed per-channel affine map, so it can be folded into
the convolution in front of it: with ``s = gamma / sqrt(running_var + eps)``,

    W' = W * s        (scaled along the output-channel axis)
    b' = (b - running_mean) * s + beta      (b = 0 when the conv has no bias)

and ``conv'(x) == bn(conv(x))`` up to float rounding.

Guarantees:

- :func:`fuse_conv_bn` works for ``Conv1d``/``Conv2d``/``Conv3d`` with any stride, padding,
  padding mode, dilation and groups, with or without a conv bias, and for BatchNorm with or
  without ``affine``; it returns a **new** conv and never modifies its inputs;
- the folding is computed in float64 and cast back to the conv's dtype, so it is at least
  as accurate as ``torch.nn.utils.fusion.fuse_conv_bn_eval``;
- anything it cannot fold exactly is refused with a ``TypeError``/``ValueError`` that says
  why: modules in training mode, BatchNorm without running statistics
  (``track_running_stats=False``: it normalises with batch statistics even in eval mode),
  mismatched channel counts, transposed or lazy convs, a BatchNorm of the wrong dimension;
- :func:`fuse_model` finds conv + BN pairs that are **consecutive children of an
  ``nn.Sequential``**, at any depth (Sequentials inside custom modules included). It does not
  read custom ``forward()`` methods: a pair wired together in a hand-written ``forward`` is
  not found (fuse it explicitly with :func:`fuse_conv_bn`, or trace with ``torch.fx``).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

__all__ = ["fuse_conv_bn_weights", "fuse_conv_bn", "fuse_model", "FUSABLE_PAIRS"]

#: Which BatchNorm class may follow which conv class.
FUSABLE_PAIRS: dict[type[nn.Module], type[nn.Module]] = {
    nn.Conv1d: nn.BatchNorm1d,
    nn.Conv2d: nn.BatchNorm2d,
    nn.Conv3d: nn.BatchNorm3d,
}


def fuse_conv_bn_weights(weight: torch.Tensor, bias: torch.Tensor | None,
                         running_mean: torch.Tensor, running_var: torch.Tensor, eps: float,
                         gamma: torch.Tensor | None = None,
                         beta: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Fold BatchNorm statistics and affine parameters into a conv's weight and bias.

    Args:
        weight: conv weight, shape ``(out_channels, in_channels / groups, *kernel)``.
        bias: conv bias of shape ``(out_channels,)``, or ``None`` (treated as zeros).
        running_mean, running_var: BatchNorm running statistics, shape ``(out_channels,)``.
        eps: BatchNorm epsilon.
        gamma, beta: BatchNorm weight and bias, or ``None`` for a non-affine BatchNorm
            (treated as ones and zeros).

    Returns:
        ``(fused_weight, fused_bias)`` in ``weight``'s dtype, computed in float64, detached.

    Raises:
        ValueError: when a per-channel tensor does not have ``out_channels`` elements, or
            ``eps`` is negative.
    """
    out_channels = weight.shape[0]
    for name, t in (("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var), ("gamma", gamma), ("beta", beta)):
        if t is not None and tuple(t.shape) != (out_channels,):
            raise ValueError(f"fuse_conv_bn_weights: {name} has shape {tuple(t.shape)}, "
                             f"expected ({out_channels},) to match the conv's out_channels")
    if eps < 0:
        raise ValueError(f"fuse_conv_bn_weights: eps must be >= 0, got {eps!r}")
    f64 = dict(dtype=torch.float64, device=weight.device)
    w = weight.detach().to(**f64)
    b = torch.zeros(out_channels, **f64) if bias is None else bias.detach().to(**f64)
    g = torch.ones(out_channels, **f64) if gamma is None else gamma.detach().to(**f64)
    be = torch.zeros(out_channels, **f64) if beta is None else beta.detach().to(**f64)
    scale = g / torch.sqrt(running_var.detach().to(**f64) + eps)
    fused_w = w * scale.reshape(-1, *([1] * (w.dim() - 1)))
    fused_b = (b - running_mean.detach().to(**f64)) * scale + be
    return fused_w.to(weight.dtype), fused_b.to(weight.dtype)


def _check_pair(conv: nn.Module, bn: nn.Module) -> None:
    conv_kind = type(conv)
    if conv_kind not in FUSABLE_PAIRS:
        raise TypeError(f"fuse_conv_bn: expected nn.Conv1d/Conv2d/Conv3d, got "
                        f"{conv_kind.__name__} (transposed, lazy and other conv subclasses are "
                        f"not supported)")
    expected_bn = FUSABLE_PAIRS[conv_kind]
    if type(bn) is not expected_bn:
        raise TypeError(f"fuse_conv_bn: {conv_kind.__name__} must be followed by "
                        f"{expected_bn.__name__}, got {type(bn).__name__}")
    if conv.training or bn.training:
        raise ValueError("fuse_conv_bn: conv and BatchNorm must be in eval mode (call "
                         ".eval()); in training mode BatchNorm normalises with batch "
                         "statistics, which cannot be folded into weights")
    if not bn.track_running_stats or bn.running_mean is None or bn.running_var is None:
        raise ValueError("fuse_conv_bn: BatchNorm has no running statistics "
                         "(track_running_stats=False): it normalises with batch statistics "
                         "even in eval mode, so it cannot be folded into the conv")
    if bn.num_features != conv.out_channels:
        raise ValueError(f"fuse_conv_bn: channel mismatch: conv has out_channels="
                         f"{conv.out_channels} but BatchNorm has num_features={bn.num_features}")


def fuse_conv_bn(conv: nn.Module, bn: nn.Module) -> nn.Module:
    """Return a new conv computing ``bn(conv(x))`` of two eval-mode modules.

    Args:
        conv: an ``nn.Conv1d``, ``nn.Conv2d`` or ``nn.Conv3d`` in eval mode (any stride,
            padding, padding mode, dilation, groups; bias optional).
        bn: the matching ``nn.BatchNorm1d/2d/3d`` in eval mode, with
            ``track_running_stats=True``; ``affine`` may be True or False.

    Returns:
        A deep copy of ``conv`` (same class and hyper-parameters, eval mode) whose weight and
        bias hold the folded BatchNorm; it always has a bias. ``conv`` and ``bn`` are untouched.

    Raises:
        TypeError: on an unsupported conv class, or a BatchNorm class that does not match it.
        ValueError: on modules in training mode, a BatchNorm without running statistics,
            or ``bn.num_features != conv.out_channels``.
    """
    _check_pair(conv, bn)
    gamma, beta = (bn.weight, bn.bias) if bn.affine else (None, None)
    w, b = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var,
                                bn.eps, gamma, beta)
    fused = copy.deepcopy(conv)
    fused.weight = nn.Parameter(w, requires_grad=conv.weight.requires_grad)
    fused.bias = nn.Parameter(b, requires_grad=conv.weight.requires_grad)
    return fused.eval()


def _fuse_children(module: nn.Module) -> int:
    count = 0
    if isinstance(module, nn.Sequential):
        names = list(module._modules)
        i = 0
        while i < len(names) - 1:
            first, second = module._modules[names[i]], module._modules[names[i + 1]]
            if (type(first) in FUSABLE_PAIRS and type(second) is FUSABLE_PAIRS[type(first)]
                    and second.num_features == first.out_channels):
                module._modules[names[i]] = fuse_conv_bn(first, second)
                module._modules[names[i + 1]] = nn.Identity()
                count += 1
                i += 2
                continue
            i += 1
    for child in module.children():
        if child is not None:
            count += _fuse_children(child)
    return count


def fuse_model(model: nn.Module) -> tuple[nn.Module, int]:
    """Fuse every conv + BatchNorm pair found in ``model`` into single convs.

    Found: a ``Conv1d/2d/3d`` immediately followed by the matching ``BatchNorm1d/2d/3d``
    (with ``num_features == out_channels``; other neighbours are left alone)
    as consecutive children of an ``nn.Sequential``, at any depth. The BatchNorm is
    replaced by ``nn.Identity()`` so that indices (and names of the other children) stay
    the same. Pairs in hand-written ``forward()`` methods are not found (see module
    docstring).

    Args:
        model: the model, every submodule in eval mode.

    Returns:
        ``(fused_model, pairs_fused)``: a fused deep copy (``model`` is untouched) and the
        number of pairs folded.

    Raises:
        TypeError: when ``model`` is not an ``nn.Module``.
        ValueError: when any submodule is in training mode, or a pair found cannot be folded
            (e.g. a BatchNorm with ``track_running_stats=False``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"fuse_model: expected an nn.Module, got {type(model).__name__}")
    training = [name or "<model>" for name, m in model.named_modules() if m.training]
    if training:
        raise ValueError(f"fuse_model: model must be in eval mode (call .eval()); in training "
                         f"mode: {', '.join(training[:3])}{' ...' if len(training) > 3 else ''}")
    fused = copy.deepcopy(model)
    count = _fuse_children(fused)
    return fused, count
