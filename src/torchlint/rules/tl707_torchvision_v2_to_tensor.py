"""TL707 (opt-in): torchvision's ``transforms.v2.ToTensor`` is deprecated."""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from torchlint.edits import dotted_expression, parent_map, shadowed, torch_reference
from torchlint.model import CallSite, FileModel
from torchlint.needs import Text
from torchlint.rule import Finding, Fix, Rule

_DEPRECATED = frozenset(("torchvision.transforms.v2.ToTensor", "torchvision.transforms.v2._deprecated.ToTensor"))
# torchvision 0.16 deprecated v2.ToTensor; it pairs with torch 2.1.
_DEPRECATED_SINCE = (2, 1)


def _element_of_compose(file_model: FileModel, call: CallSite) -> Optional[cst.Element]:
    """The list element ``call`` is when it is one step of ``v2.Compose([...])``'s list of transforms."""
    parents = parent_map(file_model)
    element = parents.get(id(call.node))
    listed = parents.get(id(element)) if isinstance(element, cst.Element) else None
    argument = parents.get(id(listed)) if isinstance(listed, cst.List) else None
    compose = parents.get(id(argument)) if isinstance(argument, cst.Arg) and argument.keyword is None else None
    if not isinstance(compose, cst.Call) or compose.args[0] is not argument:
        return None
    site = file_model.call_of(compose)
    qualified = file_model.names.qualify_vision(site.callee) if site is not None else None
    composes = qualified is not None and qualified.startswith("torchvision.transforms.v2.") \
        and qualified.endswith(".Compose")
    return element if composes and isinstance(element, cst.Element) else None


class TorchvisionV2ToTensor(Rule):
    code = "TL707"
    name = "torchvision-v2-to-tensor"
    message = ("torchvision.transforms.v2.ToTensor is deprecated and will be removed; use "
               "v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])")
    default = False
    fix_safety = "unsafe"
    needs = Text(r"torchvision") & Text(r"\bv2\b") & Text(r"ToTensor")
    torch_version = """
torchvision 0.16, which deprecated `v2.ToTensor`, pairs with torch 2.1, so
the rule reports only when the target torch version
(`target-torch-version`) is 2.1 or later.
"""
    docs = """
## What it does
Finds `ToTensor()` of `torchvision.transforms.v2`, through any import of it
(`from torchvision.transforms import v2`, `import torchvision.transforms.v2
as T`, `from torchvision.transforms.v2 import ToTensor`). The version 1
`torchvision.transforms.ToTensor` is not deprecated and is left alone. This
is TorchFix's TOR202.

## Why is this bad
`v2.ToTensor` warns at every construction that it is deprecated and will be
removed in a future release: a pipeline built on it breaks on the torchvision
upgrade that removes it. Its replacement,
`v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`,
converts PIL images and arrays to the same float32 values in `[0, 1]`.

## Example
```python
from torchvision.transforms import v2

transform = v2.Compose([v2.RandomResizedCrop(224), v2.ToTensor()])
```

## Use instead
```python
import torch
from torchvision.transforms import v2

transform = v2.Compose([v2.RandomResizedCrop(224), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
```

## Fix safety
The fix writes the replacement with the module name the code used: in a
`v2.Compose([...])` list, `v2.ToTensor()` becomes the two steps
`v2.ToImage(), v2.ToDtype(torch.float32, scale=True)`; elsewhere
`v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`. It
is unsafe: the new pipeline returns a `tv_tensors.Image` (a tensor
subclass that later v2 transforms treat as an image) where `ToTensor`
returned a plain tensor, and the values agree only up to float rounding.
A `ToTensor` imported by its own name gets no fix, since the replacement
needs names the file does not import.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code or file_model.target_torch_version < _DEPRECATED_SINCE:
            return
        for call in file_model.calls:
            if file_model.names.qualify_vision(call.callee) in _DEPRECATED and not call.node.args:
                yield self.report(call.node, fix=self._fix(file_model, call))

    @staticmethod
    def _fix(file_model: FileModel, call: CallSite) -> Optional[Fix]:
        module, _, _ = (call.callee or "").rpartition(".")
        if not module or shadowed(call.scope, module.split(".", 1)[0]):
            return None
        float32, imports = torch_reference(file_model, "float32")
        if shadowed(call.scope, float32.split(".", 1)[0]):
            return None
        to_image, to_dtype = (cst.parse_expression(f"{module}.ToImage()"),
                              cst.parse_expression(f"{module}.ToDtype({float32}, scale=True)"))
        description = "use ToImage and ToDtype(float32, scale=True)"
        element = _element_of_compose(file_model, call)
        if element is not None:  # one step of a Compose list becomes two steps of it
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            pair = cst.FlattenSentinel([cst.Element(to_image, comma=comma), element.with_changes(value=to_dtype)])
            return Fix(description, ((element, pair),), imports=imports)
        composed = cst.Call(func=dotted_expression(f"{module}.Compose"),
                            args=[cst.Arg(cst.List([cst.Element(to_image), cst.Element(to_dtype)]))])
        return Fix(description, ((call.node, composed),), imports=imports)

    valid = (
        """\
import torch
from torchvision import transforms
from torchvision.transforms import v2

classic = transforms.Compose([transforms.Resize(256), transforms.ToTensor()])
modern = v2.Compose([v2.Resize(256), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
""",
        """\
# target-torch-version: 2.0
import torchvision.transforms.v2 as T

pipeline = T.Compose([T.CenterCrop(224), T.ToTensor()])
""",
    )
    invalid = (
        """\
import torch
from torchvision.transforms import v2

train_transform = v2.Compose([v2.RandomResizedCrop(224), v2.ToTensor()])  # expect: TL707
""",
        """\
import torchvision
from torchvision.transforms.v2 import ToTensor


def pipelines():
    full = torchvision.transforms.v2.ToTensor()  # expect: TL707
    short = ToTensor()  # expect: TL707
    return full, short
""",
    )
