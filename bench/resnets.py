"""ResNets for the benchmarks that run torch (claims.py, scale.py): torchvision's when it imports, ours otherwise.

torchvision is not always importable beside the torch a machine has (PyPI's torchvision is built
against CUDA torch, and fails to import beside the CPU build), so the benchmarks carry the two
architectures they use, written from ``torch.nn`` layers in torchvision's layout: ResNet-18
(BasicBlocks [2, 2, 2, 2]) and ResNet-50 (Bottlenecks [3, 4, 6, 3]), 1000 classes. Same parameter
counts as torchvision's (11.7 M and 25.6 M); weights are random, nothing is downloaded.
"""
from __future__ import annotations

from torch import nn

_LAYOUT = {"resnet18": ("basic", (2, 2, 2, 2)), "resnet50": ("bottleneck", (3, 4, 6, 3))}
NAMES = tuple(_LAYOUT)
LABELS = {"resnet18": "ResNet-18", "resnet50": "ResNet-50"}


def _shortcut(inplanes, planes, stride):
    if stride == 1 and inplanes == planes:
        return None
    return nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(inplanes, planes, stride)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width, out = planes, planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)  # stride on the 3x3, as torchvision's V1.5
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(inplanes, out, stride)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def handwritten(name: str, num_classes: int = 1000) -> nn.Module:
    kind, counts = _LAYOUT[name]
    block = BasicBlock if kind == "basic" else Bottleneck
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    inplanes = 64
    for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), counts)):
        for index in range(count):
            stride = 2 if stage and not index else 1
            layers.append(block(inplanes, planes, stride))
            inplanes = planes * block.expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inplanes, num_classes)]
    return nn.Sequential(*layers)


def torchvision_version():
    """torchvision's version when it imports here, else None (the hand-written models are used)."""
    try:
        import torchvision
    except Exception:  # noqa: BLE001 - ImportError, or the RuntimeError of a wheel built for another torch
        return None
    return torchvision.__version__


def build(name: str) -> nn.Module:
    """torchvision's ``name`` with random weights when torchvision imports, else ours."""
    if torchvision_version() is not None:
        import torchvision

        return getattr(torchvision.models, name)(weights=None)
    return handwritten(name)


def label(name: str) -> str:
    version = torchvision_version()
    source = f"torchvision {version}" if version else "hand-written in bench/resnets.py, torchvision's layout"
    return f"{LABELS[name]} ({source})"
