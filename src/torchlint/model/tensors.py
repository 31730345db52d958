"""Which names in one function visibly hold tensors.

A parameter is a tensor when the function treats it as one: calls a
tensor-only method on it (``x.contiguous()``, ``x.size()``), reads a
tensor-only attribute (``x.device``, ``x.requires_grad``), multiplies it
with ``@``, passes it first to
a torch operation (``torch.tanh(x)``, ``F.linear(x, w)``), annotates it
``Tensor`` or saves it with ``ctx.save_for_backward``. A parameter with a
non-``None`` default, a non-tensor annotation or an ``isinstance`` check is
config, or may be. A local name is a tensor when it is bound to a torch
operation on a tensor, a tensor method's result, arithmetic on a tensor,
indexing into one. Anything else is unknown, and unknown is not a tensor.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, FrozenSet, List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model.expr import dotted, positional
from torchlint.model.vocab import DATA_FACTORIES
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.model import FileModel

TENSOR_ONLY_METHODS = frozenset(
    "contiguous view view_as size dim numel new_zeros new_empty new_ones new_full new_tensor "
    "data_ptr clone detach float half double bfloat16 cuda type_as expand expand_as unsqueeze "
    "permute mm bmm matmul masked_fill masked_fill_ index_select is_contiguous element_size "
    "requires_grad_ narrow nelement stride storage_offset t".split()
)
TENSOR_ONLY_ATTRS = frozenset("device is_cuda requires_grad grad_fn is_leaf".split())
# Tensor methods and attributes whose result is not a tensor.
NOT_TENSOR_METHODS = frozenset(
    "size dim numel item tolist numpy stride data_ptr element_size nelement get_device ndimension "
    "type storage untyped_storage storage_offset is_contiguous is_floating_point is_complex "
    "is_signed __len__ equal allclose has_names register_hook".split()
)
TENSOR_ATTRS = frozenset("data T mT H mH real imag grad".split())
# Methods whose result is (or usually is) a view of the receiver: it shares its storage.
VIEW_METHODS = frozenset(
    "contiguous view view_as reshape reshape_as detach t transpose permute expand expand_as "
    "unsqueeze squeeze flatten unflatten narrow select as_strided".split()
)
# Torch functions whose first argument is no tensor (a shape, data, a dtype) or whose result is none.
_NOT_TENSOR_TORCH = DATA_FACTORIES | frozenset(
    "numel result_type promote_types can_cast broadcast_shapes equal get_device typename Size "
    "finfo iinfo device dtype manual_seed get_rng_state set_rng_state no_grad enable_grad "
    "is_grad_enabled get_default_dtype".split()
)
_OP_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
_TENSOR_TYPES = frozenset(("Tensor", "torch.Tensor", "Optional[Tensor]", "Optional[torch.Tensor]"))
_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def returns_no_tensor(method: str) -> bool:
    """A tensor method whose result is no tensor: ``x.size()``, ``x.item()``, and every
    ``is_*`` question (``x.is_pinned()``, ``x.is_same_size(y)``) answers with a bool."""
    return method in NOT_TENSOR_METHODS or method.startswith("is_")


def torch_op(file_model: FileModel, func: cst.BaseExpression) -> Optional[str]:
    """``tanh`` for ``torch.tanh``/``F.tanh``: a torch operation returning tensors, else None."""
    qualified = file_model.names.qualify(dotted(func))
    if qualified is None:
        return None
    name = qualified.rsplit(".", 1)[-1]
    if name in _NOT_TENSOR_TORCH or name.startswith(("is_", "_")):
        return None
    if qualified.count(".") == 1 or qualified.startswith(_OP_NAMESPACES):
        return name
    return None


class TensorNames:
    """The tensor-holding names of one function, replayed in source order."""

    def __init__(self, file_model: FileModel, scope: Scope, skip_params: int = 0) -> None:
        self.file_model = file_model
        self.scope = scope
        # Module-level code has no parameters (and its node no ``params`` to read).
        self.params = frozenset() if scope.is_module else self._tensor_params(scope.params[skip_params:])

    # -- parameters ------------------------------------------------------
    def _tensor_params(self, names: Tuple[str, ...]) -> frozenset:
        config = self._config_params()
        candidates = [n for n in names if n not in config]
        seen: Set[Optional[str]] = set()
        for call in self.scope.calls:
            if call.receiver in candidates and call.method in TENSOR_ONLY_METHODS:
                seen.add(call.receiver)
            elif call.method in ("save_for_backward", "mark_dirty", "mark_non_differentiable"):
                seen.update(dotted(a.value) for a in call.node.args)
            elif torch_op(self.file_model, call.node.func) is not None:
                first = positional(call.node, 0)
                seen.add(dotted(first) if first is not None else None)
        seen |= self._attribute_evidence(candidates)
        return frozenset(n for n in candidates if n in seen or n in self._annotated(_TENSOR_TYPES))

    def _config_params(self) -> set:
        """Parameters with a default other than None, a non-tensor annotation, or an isinstance check."""
        params = self._function.params
        out: Set[Optional[str]] = set()
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            if p.default is not None and not (isinstance(p.default, cst.Name) and p.default.value == "None"):
                out.add(p.name.value)
            if p.annotation is not None and self._annotation(p) not in _TENSOR_TYPES:
                out.add(p.name.value)
        for call in self.scope.calls:
            if call.callee == "isinstance" and call.node.args:
                out.add(dotted(call.node.args[0].value))
        return out

    @staticmethod
    def _annotation(param: cst.Param) -> str:
        assert param.annotation is not None  # asked of annotated parameters
        return cst.Module([]).code_for_node(param.annotation.annotation).replace(" ", "")

    @property
    def _function(self) -> cst.FunctionDef:
        node = self.scope.node
        assert isinstance(node, cst.FunctionDef)  # parameters are a function's
        return node

    def _annotated(self, kinds: FrozenSet[str]) -> set:
        params = self._function.params
        return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                if p.annotation is not None and self._annotation(p) in kinds}

    def _attribute_evidence(self, candidates: List[str]) -> set:
        found: Set[Optional[str]] = set()

        def enter(node: cst.CSTNode) -> None:
            if isinstance(node, cst.Attribute) and node.attr.value in TENSOR_ONLY_ATTRS:
                found.add(dotted(node.value))
            elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
                found.update((dotted(node.left), dotted(node.right)))  # ``x @ w``: never a scalar

        walk(self._function.body, enter, lambda node: None)
        return found & set(candidates)

    # -- values ----------------------------------------------------------
    def views_param(self, expr: cst.BaseExpression) -> bool:
        """``expr`` is a tensor parameter or a view of one: ``x``, ``x.data``, ``x[0]``,
        ``x.contiguous()``, ``(x, w)``. In-place writes to the argument show through it."""
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t is cst.Name:
            return e.value in self.params
        if t is cst.Attribute:
            return e.attr.value in TENSOR_ATTRS and self.views_param(e.value)
        if t is cst.Subscript:
            return self.views_param(e.value)
        if t is cst.Call and isinstance(e.func, cst.Attribute):
            return e.func.attr.value in VIEW_METHODS and self.views_param(e.func.value)
        if t in (cst.Tuple, cst.List):
            return any(self.views_param(el.value) for el in e.elements)
        return False

    def known_at(self, order: int) -> frozenset:
        """Names holding a tensor just before ``order``."""
        known = set(self.params)
        for a in self.scope.assignments:
            if a.order >= order:
                break
            if a.kind != "assign":
                continue
            tensor = self.is_tensor(a.value, known)
            for target in a.targets:
                path = dotted(target)
                if path is None:
                    continue
                (known.add if tensor else known.discard)(path)
        return frozenset(known)

    def is_tensor(self, expr: Optional[cst.BaseExpression], known: Union[FrozenSet[str], Set]) -> bool:
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t is cst.Name:
            return e.value in known
        if t is cst.Attribute:
            return e.attr.value in TENSOR_ATTRS and self.is_tensor(e.value, known)
        if t is cst.Subscript:
            return self.is_tensor(e.value, known)
        if t is cst.Call:
            return self._call_is_tensor(e, known)
        if t is cst.BinaryOperation:
            return self.is_tensor(e.left, known) or self.is_tensor(e.right, known)
        if t is cst.UnaryOperation:
            return not isinstance(e.operator, cst.Not) and self.is_tensor(e.expression, known)
        if t is cst.Comparison:
            return all(isinstance(c.operator, _COMPARISONS) for c in e.comparisons) and (
                self.is_tensor(e.left, known) or any(self.is_tensor(c.comparator, known) for c in e.comparisons))
        if t in (cst.Tuple, cst.List):
            return any(self.is_tensor(el.value, known) for el in e.elements)
        if t is cst.IfExp:
            return self.is_tensor(e.body, known) or self.is_tensor(e.orelse, known)
        return False

    def _call_is_tensor(self, call: cst.Call, known: Union[FrozenSet[str], Set]) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and self.is_tensor(func.value, known):
            return not returns_no_tensor(func.attr.value)
        if torch_op(self.file_model, func) is None:
            return False
        return any(self.is_tensor(arg.value, known) for arg in call.args)
