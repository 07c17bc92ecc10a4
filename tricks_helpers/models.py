"""Small, deterministic models for the chapters' experiments (introduced in chapters 04 and 05).

Guarantees:

- the same arguments and ``seed`` give bitwise-identical initial weights on every call;
- building a model does not touch the global random state: weights are drawn inside
  :func:`torch.random.fork_rng`, which restores the CPU generator on exit;
- hidden ``Linear`` layers of :func:`mlp` use Kaiming (He) normal initialisation, so activations
  keep their scale through deep stacks. (PyTorch's default ``Linear`` init shrinks the variance
  by about 3x per layer; after a few dozen layers activations and gradients reach float32
  *denormals*, which are many times slower on CPU and would spoil every timing.)
- the models are plain ``nn.Sequential`` stacks, so ``torch.utils.checkpoint.checkpoint_sequential``
  and per-layer loops work on them directly (``mlp``: input layer, ``blocks`` hidden blocks,
  output layer).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["mlp", "small_cnn"]


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")


_ACTIVATIONS = ("relu", "gelu")


def mlp(in_features: int, hidden: int, out_features: int, blocks: int = 2, *,
        layers_per_block: int = 1, activation: str = "relu", batchnorm: bool = False,
        inplace: bool = False, seed: int = 0) -> nn.Sequential:
    """A multi-layer perceptron of ``blocks`` identical hidden blocks.

    Layout: ``Sequential(Linear(in, hidden), act, *blocks, Linear(hidden, out))`` where each
    block is ``Sequential`` of ``layers_per_block`` times ``Linear(hidden, hidden),
    [BatchNorm1d(hidden)], act``. All but the output layer get Kaiming-normal weights
    (``nonlinearity="relu"``); biases keep PyTorch's default init.

    Args:
        in_features, hidden, out_features: layer widths (>= 1).
        blocks: number of hidden blocks (>= 0).
        layers_per_block: ``Linear`` layers in each block (>= 1).
        activation: ``"relu"`` or ``"gelu"`` (GELU saves its input for backward, ReLU its output).
        batchnorm: put a ``BatchNorm1d`` before each activation inside the blocks.
        inplace: use ``ReLU(inplace=True)`` (only with ``activation="relu"``).
        seed: initial weights are drawn from ``torch.manual_seed(seed)`` inside ``fork_rng``.

    Returns:
        The model (float32, CPU, training mode).

    Raises:
        ValueError: on a width < 1, ``blocks`` < 0, ``layers_per_block`` < 1, an unknown
            activation, ``inplace`` with GELU, or a seed outside ``[0, 2**63)``.
    """
    for name, value in (("in_features", in_features), ("hidden", hidden),
                        ("out_features", out_features)):
        _check_int(name, value, 1)
    _check_int("blocks", blocks, 0)
    _check_int("layers_per_block", layers_per_block, 1)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {activation!r}")
    if inplace and activation != "relu":
        raise ValueError("inplace=True needs activation='relu' (GELU has no in-place variant)")
    _check_seed(seed)

    def act() -> nn.Module:
        return nn.ReLU(inplace=inplace) if activation == "relu" else nn.GELU()

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers: list[nn.Module] = [nn.Linear(in_features, hidden), act()]
        for _ in range(blocks):
            block: list[nn.Module] = []
            for _ in range(layers_per_block):
                block.append(nn.Linear(hidden, hidden))
                if batchnorm:
                    block.append(nn.BatchNorm1d(hidden))
                block.append(act())
            layers.append(nn.Sequential(*block))
        for m in layers:
            for lin in m.modules():
                if isinstance(lin, nn.Linear):
                    nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
        layers.append(nn.Linear(hidden, out_features))
        return nn.Sequential(*layers)


def small_cnn(in_channels: int = 1, num_classes: int = 10, width: int = 16, *,
              batchnorm: bool = True, seed: int = 0) -> nn.Sequential:
    """A small convolutional classifier for small images (e.g. 8x8 digits, 32x32 images).

    Layout: two ``Conv2d(3x3, padding=1) -> [BatchNorm2d] -> ReLU`` stages (``width`` then
    ``2 * width`` channels, the second with stride 2), global average pooling, ``Linear``.
    Works for any input size >= 2x2.

    Args:
        in_channels: channels of the input images (>= 1).
        num_classes: outputs (>= 1).
        width: channels of the first convolution (>= 1).
        batchnorm: put a ``BatchNorm2d`` after each convolution (convolutions then have no bias).
        seed: initial weights are drawn from ``torch.manual_seed(seed)`` inside ``fork_rng``.

    Returns:
        The model (float32, CPU, training mode).

    Raises:
        ValueError: on a count < 1 or a seed outside ``[0, 2**63)``.
    """
    for name, value in (("in_channels", in_channels), ("num_classes", num_classes),
                        ("width", width)):
        _check_int(name, value, 1)
    _check_seed(seed)

    def stage(cin: int, cout: int, stride: int) -> list[nn.Module]:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, 3, stride=stride, padding=1,
                                             bias=not batchnorm)]
        if batchnorm:
            layers.append(nn.BatchNorm2d(cout))
        layers.append(nn.ReLU())
        return layers

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(
            *stage(in_channels, width, 1),
            *stage(width, 2 * width, 2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(2 * width, num_classes),
        )
