"""Which torchvision builders load ImageNet V1 weights for the legacy ``pretrained=True``.

TL705's fix rewrites ``pretrained=True`` to ``weights="IMAGENET1K_V1"`` for exactly these builders,
and its runtime probe (``fixtures/TL705_torchvision_pretrained/probe.py``) checks the same table
against torchvision itself. The probe loads this file by its path, without the torchlint package,
so it imports nothing but the standard library.
"""
from __future__ import annotations

import re

# Classification builders whose legacy ``pretrained=True`` loads ``IMAGENET1K_V1``: each
# is declared ``@handle_legacy_interface(weights=("pretrained", <Model>_Weights.IMAGENET1K_V1))``
# in torchvision/models/<family>.py (0.13 on). Left out: vit_h_14 and regnet_y_128gf (no
# V1 weights), and the detection, segmentation, video, optical-flow and quantized builders
# (other legacy weights, or a ``quantize`` flag that picks them).
_IMAGENET_V1 = re.compile(
    r"(?:resnet(?:18|34|50|101|152)|resnext(?:50_32x4d|101_32x8d|101_64x4d)|wide_resnet(?:50|101)_2"
    r"|vgg(?:11|13|16|19)(?:_bn)?|alexnet|densenet(?:121|161|169|201)|squeezenet1_[01]|googlenet|inception_v3"
    r"|mobilenet_v2|mobilenet_v3_(?:large|small)|shufflenet_v2_x(?:0_5|1_0|1_5|2_0)|mnasnet(?:0_5|0_75|1_0|1_3)"
    r"|efficientnet_b[0-7]|efficientnet_v2_[sml]|convnext_(?:tiny|small|base|large)"
    r"|regnet_[xy]_(?:400mf|800mf|1_6gf|3_2gf|8gf|16gf|32gf)|swin_(?:v2_)?[tsb]|vit_[bl]_(?:16|32)|maxvit_t)"
)
_CLASSIFICATION_MODULES = frozenset(
    "alexnet convnext densenet efficientnet googlenet inception maxvit mnasnet mobilenet mobilenetv2 "
    "mobilenetv3 regnet resnet shufflenetv2 squeezenet swin_transformer vgg vision_transformer".split()
)


def loads_imagenet_v1(builder: str) -> bool:
    """``resnet50`` or ``resnet.resnet50``: True; a detection builder or an unknown name: False."""
    module, _, name = builder.rpartition(".")
    return (not module or module in _CLASSIFICATION_MODULES) and _IMAGENET_V1.fullmatch(name) is not None
