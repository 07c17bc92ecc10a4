"""RepVGG-style structural re-parameterization (introduced in chapter 06).

A :class:`RepVGGBlock` trains with three parallel branches, each ending in BatchNorm:
a 3x3 conv, a 1x1 conv and (when shapes allow) the identity. All three are linear in
eval mode, so :func:`collapse_repvgg` folds them into **one** 3x3 conv:

1. fold each branch's BatchNorm into its kernel
   (:func:`tricks_helpers.fusion.fuse_conv_bn_weights`);
2. write the 1x1 kernel at the centre of a zero 3x3 kernel;
3. write the identity as a 3x3 kernel with a 1 at the centre of channel ``i -> i``;
4. add the three kernels and the three biases.

Guarantees: the collapsed module equals the block in eval mode up to float rounding
(checked in ``tests/test_reparam.py``), conv biases included (the block's convs have none,
but a block whose ``conv3``/``conv1`` were given one is folded with it); inputs are never
modified; a block in training mode is refused, because its BatchNorms then use batch
statistics, and so are blocks carrying hooks, which the new module could not keep. Wrong
types raise ``TypeError``, wrong values ``ValueError`` (the package's policy).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from tricks_helpers._checks import check_int, check_type
from tricks_helpers.fusion import _hooks, fuse_conv_bn_weights

__all__ = ["RepVGGBlock", "collapse_repvgg", "identity_kernel"]


class RepVGGBlock(nn.Module):
    """``act(bn3(conv3x3(x)) + bn1(conv1x1(x)) + bn_id(x))``, the training-time RepVGG block.

    The identity branch exists only when ``in_channels == out_channels`` and ``stride == 1``.

    Args:
        in_channels, out_channels: channel counts (both divisible by ``groups``).
        stride: stride of both convs (1 or 2 in RepVGG).
        groups: conv groups.
        act: the non-linearity after the sum (default ``nn.ReLU()``).

    Raises:
        TypeError: on non-integer sizes, or an ``act`` that is not an ``nn.Module``.
        ValueError: on sizes < 1 or channels not divisible by ``groups``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        stride: int = 1,
        groups: int = 1,
        act: nn.Module | None = None,
    ) -> None:
        super().__init__()
        for name, v in (
            ("in_channels", in_channels),
            ("out_channels", out_channels),
            ("stride", stride),
            ("groups", groups),
        ):
            check_int("RepVGGBlock", name, v, minimum=1)
        if act is not None:
            check_type("RepVGGBlock", "act", act, nn.Module)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"RepVGGBlock: in_channels={in_channels} and out_channels="
                f"{out_channels} must both be divisible by groups={groups}"
            )
        self.conv3 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, groups=groups, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 1, stride, 0, groups=groups, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.bn_id = (
            nn.BatchNorm2d(in_channels) if in_channels == out_channels and stride == 1 else None
        )
        self.act = nn.ReLU() if act is None else act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn3(self.conv3(x)) + self.bn1(self.conv1(x))
        if self.bn_id is not None:
            y = y + self.bn_id(x)
        return self.act(y)


def identity_kernel(
    channels: int,
    groups: int = 1,
    kernel_size: int = 3,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The conv kernel (``channels, channels/groups, k, k``) whose conv is the identity map.

    Channel ``i`` sits at position ``i % (channels / groups)`` inside its group.

    Raises:
        TypeError: on non-integer sizes.
        ValueError: on an even ``kernel_size`` (no centre), sizes < 1, or channels not
            divisible by groups.
    """
    check_int("identity_kernel", "channels", channels, minimum=1)
    check_int("identity_kernel", "groups", groups, minimum=1)
    check_int("identity_kernel", "kernel_size", kernel_size, minimum=1)
    if kernel_size % 2 == 0:
        raise ValueError(
            f"identity_kernel: kernel_size must be odd and positive, got {kernel_size}"
        )
    if channels % groups:
        raise ValueError(
            f"identity_kernel: channels={channels} must be a positive multiple of groups={groups}"
        )
    per_group = channels // groups
    k = torch.zeros(channels, per_group, kernel_size, kernel_size, dtype=dtype, device=device)
    c = kernel_size // 2
    for i in range(channels):
        k[i, i % per_group, c, c] = 1.0
    return k


def _bn_args(bn: nn.BatchNorm2d) -> tuple:
    gamma, beta = (bn.weight, bn.bias) if bn.affine else (None, None)
    return bn.running_mean, bn.running_var, bn.eps, gamma, beta


def collapse_repvgg(block: RepVGGBlock) -> nn.Sequential:
    """Collapse an eval-mode :class:`RepVGGBlock` into ``nn.Sequential(conv3x3, act)``.

    Args:
        block: the trained block, in eval mode.

    Returns:
        A new ``nn.Sequential`` of one ``nn.Conv2d`` (3x3, same stride, padding 1, groups,
        with bias) and a copy of the block's activation, equal to ``block`` in eval mode
        (biases of ``conv3`` and ``conv1``, when present, are folded in too).

    Raises:
        TypeError: when ``block`` is not a :class:`RepVGGBlock`.
        ValueError: when ``block`` (or any submodule) is in training mode, a BatchNorm
            has no running statistics, or a module of the block carries hooks (the
            collapsed module could not run them at the same place).
    """
    if not isinstance(block, RepVGGBlock):
        raise TypeError(f"collapse_repvgg: expected a RepVGGBlock, got {type(block).__name__}")
    if any(m.training for m in block.modules()):
        raise ValueError(
            "collapse_repvgg: block must be in eval mode (call .eval()); in "
            "training mode its BatchNorms use batch statistics"
        )
    hooked = [name or "<block>" for name, m in block.named_modules() if _hooks(m)]
    if hooked:
        raise ValueError(
            f"collapse_repvgg: {', '.join(hooked)} carries hooks that the "
            f"collapsed conv cannot run at the same place; remove them first"
        )
    bns = [block.bn3, block.bn1] + ([block.bn_id] if block.bn_id is not None else [])
    if any(not bn.track_running_stats or bn.running_mean is None for bn in bns):
        raise ValueError(
            "collapse_repvgg: every BatchNorm needs running statistics (track_running_stats=True)"
        )
    c3 = block.conv3
    w3, b3 = fuse_conv_bn_weights(c3.weight, c3.bias, *_bn_args(block.bn3))
    w1, b1 = fuse_conv_bn_weights(block.conv1.weight, block.conv1.bias, *_bn_args(block.bn1))
    weight = w3 + nn.functional.pad(w1, [1, 1, 1, 1])
    bias = b3 + b1
    if block.bn_id is not None:
        k_id = identity_kernel(c3.in_channels, c3.groups, 3, c3.weight.dtype, c3.weight.device)
        w_id, b_id = fuse_conv_bn_weights(k_id, None, *_bn_args(block.bn_id))
        weight = weight + w_id
        bias = bias + b_id
    conv = nn.Conv2d(
        c3.in_channels,
        c3.out_channels,
        3,
        c3.stride,
        1,
        groups=c3.groups,
        bias=True,
        device=c3.weight.device,
        dtype=c3.weight.dtype,
    )
    with torch.no_grad():
        conv.weight.copy_(weight)
        conv.bias.copy_(bias)
    return nn.Sequential(conv, copy.deepcopy(block.act)).eval()
