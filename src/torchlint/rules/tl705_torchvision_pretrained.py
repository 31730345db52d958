"""TL705 (opt-in): torchvision model builders called with the deprecated ``pretrained=``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Tuple

import libcst as cst

from torchlint.diagnostic import Applicability
from torchlint.model import FileModel
from torchlint.model.expr import literal_bool
from torchlint.model.torchvision_weights import loads_imagenet_v1
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

_RENAMES = {"pretrained": "weights", "pretrained_backbone": "weights_backbone"}
_NO_SPACE = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _builder(qualified: Optional[str]) -> Optional[str]:
    """``resnet50`` for ``torchvision.models.resnet50`` or ``torchvision.models.resnet.resnet50``,
    ``detection.fasterrcnn_resnet50_fpn`` for the detection builder; None for classes."""
    if not qualified or not qualified.startswith("torchvision.models."):
        return None
    path = qualified[len("torchvision.models."):]
    last = path.rsplit(".", 1)[-1]
    if not last or not last[0].islower() or last.startswith(("_", "get_", "list_", "load_")):
        return None
    return path


class TorchvisionPretrained(Rule):
    code = "TL705"
    name = "torchvision-pretrained"
    message = "pretrained= is deprecated in torchvision model builders; pass weights= instead"
    default = False
    fix_safety = "safe"
    needs = Text(r"torchvision") & Text(r"\bpretrained(?:_backbone)?\s*=")
    torch_version = """
torchvision 0.13, which deprecated `pretrained`, pairs with torch 1.12, so
the rule reports only when the target torch version
(`target-torch-version`) is 1.12 or later: older targets may run a
torchvision without `weights=`.
"""
    docs = """
## What it does
Finds calls of torchvision model builders (`torchvision.models.resnet50`,
`models.detection.fasterrcnn_resnet50_fpn`, through any import of
`torchvision` or its `models`) that pass `pretrained=` or
`pretrained_backbone=`.

## Why is this bad
Since torchvision 0.13 the builders take `weights=` (an enum member such as
`ResNet50_Weights.IMAGENET1K_V2`, its name as a string, or `None`), and
`pretrained=` only survives as a deprecated alias: every call warns, and the
alias is slated for removal. The boolean also hides which weights are
loaded: `pretrained=True` means the *first* ImageNet weights
(`IMAGENET1K_V1`), not the better ones torchvision now offers as
`DEFAULT` (for ResNet-50, `IMAGENET1K_V2`: about 80.9% top-1 against
76.1%).

## Example
```python
model = torchvision.models.resnet50(pretrained=True)
backbone = models.mobilenet_v3_small(pretrained=False)
```

## Use instead
```python
model = torchvision.models.resnet50(weights="IMAGENET1K_V1")  # or "DEFAULT" for the newest
backbone = models.mobilenet_v3_small(weights=None)
```

## Fix safety
The fix is exact: `pretrained=False` becomes `weights=None`
(and `pretrained_backbone=False`, `weights_backbone=None`), which the
deprecated alias maps it to; `pretrained=True` becomes
`weights="IMAGENET1K_V1"` for the classification builders, whose alias
loads exactly those weights (torchvision accepts the member's name as a
string, so no import is needed). Moving to `"DEFAULT"` is a different,
deliberate change of weights and is left to a person. `pretrained=True` of
detection, segmentation, video, optical-flow and quantized builders, and a
`pretrained=` that is not a literal, get no fix.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code or file_model.target_torch_version < (1, 12):
            return
        for call in file_model.calls:
            builder = _builder(file_model.names.qualify_vision(call.callee))
            if builder is None:
                continue
            old = [a for a in call.node.args if a.keyword is not None and a.keyword.value in _RENAMES]
            if not old:
                continue
            edits = [edit for edit in (self._new_argument(builder, arg) for arg in old) if edit is not None]
            fix = None
            if len(edits) == len(old):
                fix = Fix("pass weights= instead of pretrained=", tuple(edits), applicability=Applicability.SAFE)
            written = [a.keyword.value for a in old if a.keyword is not None]  # each has one
            names = " and ".join(f"{w}=" for w in written)
            verb = "is" if len(old) == 1 else "are"
            yield self.report(call.node, f"{names} {verb} deprecated since torchvision 0.13; pass "
                                         f"{' and '.join(_RENAMES[w] + '=' for w in written)} instead",
                              fix=fix)

    @staticmethod
    def _new_argument(builder: str, arg: cst.Arg) -> Optional[Tuple[cst.Arg, cst.Arg]]:
        flag = literal_bool(arg.value)
        if flag is None or arg.keyword is None:  # (asked of ``pretrained=``-like keywords)
            return None
        if flag is False:
            value: cst.BaseExpression = cst.Name("None")
        elif arg.keyword.value == "pretrained" and loads_imagenet_v1(builder):
            value = cst.SimpleString('"IMAGENET1K_V1"')
        else:
            return None
        return arg, arg.with_changes(keyword=cst.Name(_RENAMES[arg.keyword.value]), value=value)

    valid = (
        """\
import torch
from torchvision import models


def build(num_classes):
    model = models.resnet50(weights=models.ResNet50_Weights.DEFAULT)
    model.fc = torch.nn.Linear(model.fc.in_features, num_classes)
    return model
""",
        """\
import timm
from transformers import AutoModel


def build():
    backbone = timm.create_model("resnet50", pretrained=True)
    text = AutoModel.from_pretrained("bert-base-uncased")
    return backbone, text
""",
        """\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, pretrained=False):
        super().__init__()
        self.net = make_net(pretrained=pretrained)
""",
    )
    invalid = (
        """\
import torch
import torchvision


def build(num_classes):
    model = torchvision.models.resnet18(pretrained=True)  # expect: TL705
    model.fc = torch.nn.Linear(512, num_classes)
    return model
""",
        """\
from torchvision import models
from torchvision.models.detection import fasterrcnn_resnet50_fpn


def build():
    scratch = models.vgg16(pretrained=False)  # expect: TL705
    detector = fasterrcnn_resnet50_fpn(pretrained=True, pretrained_backbone=True)  # expect: TL705
    return scratch, detector
""",
    )
