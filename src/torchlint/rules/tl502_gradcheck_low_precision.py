"""TL502: gradcheck/gradgradcheck on float32 inputs: finite differences too coarse to check anything."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple
import libcst as cst

from torchlint.edits import dotted_expression
from torchlint.model import FileModel
from torchlint.model.dtypes import DtypeReader
from torchlint.model.expr import dotted, keyword, literal_number, positional
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.dtypes import Origin
    from torchlint.model.records import Scope, Site
    from torchlint.rule import Finding

_GRADCHECKS = frozenset(
    f"torch.autograd.{module}{name}" for module in ("", "gradcheck.") for name in ("gradcheck", "gradgradcheck")
)
_COMPLEX = ("cfloat", "complex64", "chalf", "complex32")


def input_elements(scope: Scope, call_site: Site, inputs: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The tensors a gradcheck call perturbs: the items of ``(x, w)``, of a tuple
    bound to a name just before, or the one tensor passed alone."""
    if isinstance(inputs, cst.Name):
        bindings = [a for a in scope.assignments if a.order < call_site.order
                    and any(dotted(t) == inputs.value for t in a.targets)]
        if bindings and bindings[-1].kind == "assign" and isinstance(bindings[-1].value, (cst.Tuple, cst.List)):
            inputs = bindings[-1].value
    if isinstance(inputs, (cst.Tuple, cst.List)):
        return [el.value for el in inputs.elements if not isinstance(el, cst.StarredElement)]
    return [inputs]


def _to_double(file_model: FileModel, origin: Origin) -> Tuple[cst.CSTNode, cst.CSTNode]:
    """The edit that makes ``origin`` float64 (complex128 for complex dtypes)."""
    node, torch = origin.node, file_model.names.torch_alias
    if origin.kind == "cast":
        assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)  # ``x.float()``
        complex_cast = node.func.attr.value == "cfloat"
        return node.func.attr, cst.Name("cdouble" if complex_cast else "double")
    if origin.kind == "dtype":
        old = (dotted(node) or "").rsplit(".", 1)[-1]
        return node, dotted_expression(f"{torch}.{'complex128' if old in _COMPLEX else 'float64'}")
    dtype = cst.Arg(keyword=cst.Name("dtype"), value=dotted_expression(f"{torch}.float64"),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))
    assert isinstance(node, cst.Call)  # the factory call that lacks ``dtype=``
    return node, node.with_changes(args=(*node.args, dtype))


# The largest step at which float32 finite differences still drown in rounding: with
# float32's 1.2e-7 relative precision, a step of 1e-4 leaves an error of about 1e-3 in
# each difference quotient, over gradcheck's default tolerances (atol 1e-5, rtol 1e-3).
_FLOAT32_TOO_SMALL_EPS = 1e-4


def _eps_too_small(eps: Optional[cst.BaseExpression]) -> bool:
    """No ``eps=`` (the default 1e-6), or a literal one no larger than float32 can bear. Any
    other ``eps=`` is a deliberate choice for the precision at hand."""
    if eps is None:
        return True
    value = literal_number(eps)
    return value is not None and value <= _FLOAT32_TOO_SMALL_EPS


class GradcheckLowPrecision(Rule):
    code = "TL502"
    name = "gradcheck-low-precision"
    message = (
        "gradcheck on float32 inputs: single-precision finite differences are too coarse for its "
        "tolerances; make the inputs float64 (dtype=torch.float64 or .double())"
    )
    fix_safety = "unsafe"
    needs = Text(r"gradcheck")
    docs = """
## What it does
Finds `torch.autograd.gradcheck` and `gradgradcheck` calls (however
imported: `from torch.autograd import gradcheck`, `from torch import
autograd`, `import torch.autograd as ag`) where an input that requires grad
is visibly single or half precision: made in the same function by
`torch.randn`/`rand`/`zeros`/`ones`/`empty`, or by `torch.tensor` of float
literals (`[0.5, 1.0]`), without a `dtype=` (so with the default float32),
with `dtype=torch.float32`/`torch.half`/`torch.bfloat16`, or cast with
`.float()`/`.half()`/`.to(torch.float32)`; wrapped in `Variable(...)` or not.

## Why is this bad
gradcheck compares the analytical gradient with central finite differences
`(f(x + eps) - f(x - eps)) / (2 * eps)` with `eps=1e-6` and `atol=1e-5`.
In float32 (about 7 significant digits) that difference is mostly rounding
error: the check fails on correct backward formulas, and the usual reaction,
loosening `atol`/`rtol` until it passes, lets wrong ones through. PyTorch
warns ("Input #0 requires gradient and is not a double precision floating
point") and its own tests run gradcheck in float64.

Not reported: inputs whose dtype cannot be seen where the call is (function
parameters, `dtype=dtype` in parametrized tests, tensors from helpers),
float32 inputs that do not require grad (gradcheck does not perturb them),
calls that set `eps=` larger than `1e-4` or to an expression (a deliberate
choice for the precision at hand; a literal `eps=1e-6` is the default
written out, and any step up to `1e-4` still leaves float32 rounding error
over gradcheck's default tolerances), and
files that change the default dtype with `torch.set_default_dtype`.

## Example
```python
x = torch.randn(8, 3, requires_grad=True)
w = torch.randn(3, 4).requires_grad_()
assert torch.autograd.gradcheck(MyMatmul.apply, (x, w))
```

## Use instead
```python
x = torch.randn(8, 3, requires_grad=True, dtype=torch.float64)
w = torch.randn(3, 4, dtype=torch.float64).requires_grad_()
assert torch.autograd.gradcheck(MyMatmul.apply, (x, w))
```

## Fix safety
The fix adds `dtype=torch.float64` to the factory call (or turns `.float()`
into `.double()`, `torch.float32` into `torch.float64`). It is unsafe: the
function under test may not support float64 (a custom kernel written for
float32 only), and the tensor may be used elsewhere in single precision.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        reader = None
        fixed: Set[int] = set()  # an input shared by several checks is fixed once
        for call in file_model.calls:
            if file_model.qualify(call) not in _GRADCHECKS or not _eps_too_small(keyword(call.node, "eps")):
                continue
            inputs = positional(call.node, 1) or keyword(call.node, "inputs")
            if inputs is None:
                continue
            reader = reader or DtypeReader(file_model)
            low = []
            for element in input_elements(call.scope, call.site, inputs):
                origin = reader.origin(element, call.scope, call.order)
                if origin is not None and origin.precision == "low" and origin.requires_grad:
                    low.append(origin)
            if not low:
                continue
            edits = tuple(_to_double(file_model, o) for o in low if id(o.node) not in fixed)
            fixed.update(id(o.node) for o in low)
            imports = () if "torch" in file_model.names.aliases.values() else ("torch",)
            fix = Fix("make gradcheck's inputs float64", edits, imports) if edits else None
            yield self.report(call.node, fix=fix)

    valid = (
        """\
import torch
from torch.autograd import gradcheck

x = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
assert gradcheck(torch.sigmoid, (x,))
""",
        """\
import torch


def check_layer(layer):
    layer = layer.double()
    x = torch.randn(2, 8).double().requires_grad_()
    return torch.autograd.gradcheck(layer, (x,))
""",
        """\
import numpy as np
import torch
import torch.autograd as autograd


def check_from_numpy(fn):
    x = torch.tensor(np.random.randn(4, 3), requires_grad=True)  # numpy's float64
    w = torch.tensor([[0.5, -1.0]], dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([2.0])  # float32, but never perturbed
    return autograd.gradcheck(fn, (x, w, scale))
""",
    )
    invalid = (
        """\
import torch
from torch.autograd import gradcheck

x = torch.randn(4, 3, requires_grad=True)
assert gradcheck(torch.sigmoid, (x,))  # expect: TL502
""",
        """\
import torch


def check_layer(layer):
    x = torch.randn(2, 8).half().requires_grad_()
    return torch.autograd.gradcheck(layer, (x,))  # expect: TL502
""",
        """\
import torch
import torch.autograd as autograd
from torch.autograd import Variable


def check_activation(fn):
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w = Variable(torch.randn(3), requires_grad=True)
    assert autograd.gradcheck(fn, (x, w))  # expect: TL502
    return autograd.gradgradcheck(fn, (x, w))  # expect: TL502
""",
    )
