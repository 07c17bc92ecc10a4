"""A ResNet-18-shaped network written out, no download (introduced in chapter 06).

:func:`resnet18` builds the architecture of ``torchvision.models.resnet18`` (He et al., 2016):
a 7x7 stem, four stages of two :class:`BasicBlock` s (64, 128, 256, 512 channels), global
average pooling and a linear head. It exists so that the book can measure inference tricks on
a network of realistic shape (about 1.8 GMACs per 224x224 image, 20 conv + BatchNorm pairs,
most of them wired in ``forward()`` rather than in an ``nn.Sequential``) without torchvision
or downloaded weights.

Guarantees:

- module names, parameter shapes and ``state_dict`` keys are those of torchvision's
  ``resnet18`` (``conv1``, ``bn1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``...),
  so its pretrained weights load with ``load_state_dict`` where torchvision is available;
  with 1000 classes the network has 11,689,512 parameters, like torchvision's;
- the initialisation follows torchvision's (Kaiming-normal ``fan_out`` convs, BatchNorm
  weight 1 and bias 0, PyTorch's default ``Linear`` init), drawn inside
  :func:`torch.random.fork_rng` from ``seed``: the same arguments give bitwise-identical
  weights on every call, and the global random state is left untouched;
- the model is returned in training mode, float32, on the CPU, with fresh BatchNorm running
  statistics (mean 0, variance 1): give them realistic values before measuring inference,
  e.g. with :func:`torch.optim.swa_utils.update_bn`.
"""

from __future__ import annotations

import torch
from torch import nn

from tricks_helpers._checks import check_bool, check_int, check_type

__all__ = ["BasicBlock", "ResNet", "resnet18", "RESNET18_PARAMETERS"]

#: Parameters of ``torchvision.models.resnet18()`` (1000 classes).
RESNET18_PARAMETERS = 11_689_512


class BasicBlock(nn.Module):
    """``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))``, ResNet's two-conv block.

    The shortcut is the identity, or ``downsample = Sequential(conv1x1, BatchNorm2d)`` when the
    stride or the channel count changes. Convs have no bias (a BatchNorm follows each).

    Args:
        in_channels, out_channels: channel counts (>= 1).
        stride: stride of the first 3x3 conv and of the shortcut conv (>= 1).

    Raises:
        TypeError: on non-integer arguments.
        ValueError: on values < 1.
    """

    expansion = 1

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        check_int("BasicBlock", "in_channels", in_channels, minimum=1)
        check_int("BasicBlock", "out_channels", out_channels, minimum=1)
        check_int("BasicBlock", "stride", stride, minimum=1)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample: nn.Module | None = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """A ResNet of :class:`BasicBlock` stages (ResNet-18 with ``layers=(2, 2, 2, 2)``).

    Args:
        layers: blocks per stage, four integers >= 1.
        num_classes: outputs of the linear head (>= 1).
        zero_init_residual: start every block's last BatchNorm weight at 0 (each block then
            starts as the identity), as torchvision's option of the same name.

    Raises:
        TypeError: on wrong-typed arguments.
        ValueError: on a ``layers`` that is not four integers >= 1, or ``num_classes`` < 1.
    """

    def __init__(
        self,
        layers: tuple[int, int, int, int] = (2, 2, 2, 2),
        num_classes: int = 1000,
        zero_init_residual: bool = False,
    ) -> None:
        super().__init__()
        check_type("ResNet", "layers", layers, (tuple, list))
        if len(layers) != 4:
            raise ValueError(
                f"ResNet: layers must have 4 entries (blocks per stage), got {len(layers)}"
            )
        for i, n in enumerate(layers):
            check_int("ResNet", f"layers[{i}]", n, minimum=1)
        check_int("ResNet", "num_classes", num_classes, minimum=1)
        check_bool("ResNet", "zero_init_residual", zero_init_residual)
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        channels = 64
        for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), layers), start=1):
            stride = 1 if stage == 1 else 2
            stage_blocks = [BasicBlock(channels, width, stride)]
            stage_blocks += [BasicBlock(width, width) for _ in range(blocks - 1)]
            setattr(self, f"layer{stage}", nn.Sequential(*stage_blocks))
            channels = width
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.zeros_(m.bn2.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes: int = 1000, *, seed: int = 0, zero_init_residual: bool = False) -> ResNet:
    """ResNet-18, shaped like ``torchvision.models.resnet18(num_classes=...)``, seeded.

    Args:
        num_classes: outputs of the head (>= 1); 1000 gives 11,689,512 parameters.
        seed: the weights are drawn from ``torch.manual_seed(seed)`` inside ``fork_rng``
            (an integer in ``[0, 2**63)``).
        zero_init_residual: see :class:`ResNet`.

    Returns:
        The model: float32, CPU, training mode, BatchNorm running statistics at their defaults.

    Raises:
        TypeError: on wrong-typed arguments.
        ValueError: on ``num_classes`` < 1 or a seed out of range.
    """
    check_int("resnet18", "num_classes", num_classes, minimum=1)
    seed = check_int("resnet18", "seed", seed, minimum=0, maximum=2**63 - 1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ResNet((2, 2, 2, 2), num_classes, zero_init_residual)
