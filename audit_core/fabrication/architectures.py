"""The built-in image architectures: a small CNN and a CIFAR-style ResNet-18, and recognising them by their weights."""

from __future__ import annotations

import torch
from torch import nn

from audit_core.fabrication.choices import ARCHITECTURES

__all__ = ["ResNet18", "SmallCNN", "architecture_of", "make_model"]


class SmallCNN(nn.Module):
    """Two conv blocks (16 and 32 channels) and a two-layer head; takes 8x8 up to 32x32 inputs."""

    def __init__(self, in_channels: int = 1, n_classes: int = 10, width: int = 16):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.squeeze = nn.AdaptiveAvgPool2d(4)
        self.fc1 = nn.Linear(2 * width * 16, 64)
        self.fc2 = nn.Linear(64, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of a batch of images (n, channels, height, width)."""
        x = torch.relu(self.conv2(self.pool(torch.relu(self.conv1(x)))))
        if x.shape[-1] != 4 or x.shape[-2] != 4:  # 8x8 inputs are 4x4 here already: the pooling would copy them
            x = self.squeeze(x)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class _BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The residual block: two 3x3 convolutions with batch norm, plus the (projected) input."""
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """CIFAR-style ResNet-18 (3x3 stem, no max-pool), as in Kuang Liu's pytorch-cifar."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, c = [], 64
        for i, width in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(_BasicBlock(c, width, stride), _BasicBlock(width, width, 1)))
            c = width
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(512, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of a batch of images (n, channels, height, width)."""
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1)
        return self.linear(out)


_BUILDERS: dict[str, type[SmallCNN] | type[ResNet18]] = {"small_cnn": SmallCNN, "resnet18": ResNet18}
"""Each name of :data:`~audit_core.fabrication.choices.ARCHITECTURES` and its class."""


def make_model(arch: str, *, in_channels: int, n_classes: int) -> nn.Module:
    """Build an untrained model of a built-in architecture (one of :data:`~audit_core.fabrication.choices.ARCHITECTURES`)."""
    return _BUILDERS[arch](in_channels, n_classes)


def architecture_of(model: nn.Module, *, in_channels: int, n_classes: int) -> str | None:
    """The built-in architecture ``model`` is an instance of, or None.

    Decided by the weights, not the Python class: the built-in architecture (at these
    channels and classes) whose parameter and buffer names and shapes are exactly the
    model's. So a TorchScript export of a built-in model is recognised too, and a
    custom network is not mistaken for one.
    """
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    for arch in ARCHITECTURES:
        with torch.device("meta"):
            candidate = make_model(arch, in_channels=in_channels, n_classes=n_classes)
        if shapes == {k: tuple(v.shape) for k, v in candidate.state_dict().items()}:
            return arch
    return None
