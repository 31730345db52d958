"""Readers of Python's own ``ast`` trees, shared by the cheap tree gates (``tree_gate.py``) and the
summaries of other modules (``function_summaries.py``, ``project.py``): one definition each."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple, Union

from torchlint.model.vocab import writes_in_place

if TYPE_CHECKING:
    from typing_extensions import TypeGuard


def ast_dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a chain of attributes on a name in a stdlib ``ast`` tree, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def grad_off_item(expr: ast.AST) -> bool:
    """A ``with`` item or decorator that ``grad.classify`` reads as no-grad whatever code it holds:
    ``no_grad()`` (a bare ``@no_grad`` too) or ``inference_mode()`` given nothing. Fewer than the
    model reads so (not ``set_grad_enabled(False)``): code a gate or an admission takes for
    grad-off code is grad-off code."""
    call = expr if isinstance(expr, ast.Call) else None
    func = call.func if call is not None else expr
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if call is None:
        return name == "no_grad"
    return name == "no_grad" or (name == "inference_mode" and not call.args and not call.keywords)


def assignment_targets(node: ast.AST) -> List[ast.expr]:
    """What an assignment statement binds, as written: every target of ``a = b = v``, the one
    target of ``a: T = v``, ``a += v`` or ``(a := v)``."""
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]


def flat_targets(target: ast.AST) -> List[ast.AST]:
    """The single targets of ``a, (b, *c) = ...``: ``[a, b, c]``."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in flat_targets(element)]
    if isinstance(target, ast.Starred):
        return flat_targets(target.value)
    return [target]


def assigned_names(target: ast.AST) -> Iterator[str]:
    """The plain names an assignment target binds: ``a`` and ``c`` in ``a, (self.h, c) = ...``."""
    return (t.id for t in flat_targets(target) if isinstance(t, ast.Name))


def bound_names(target: ast.AST) -> Iterator[str]:
    """The names and attribute names a target binds: ``a``, ``h`` and ``c`` in ``a, (self.h, c) = ...``;
    nothing for ``d[k]``."""
    for t in flat_targets(target):
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, ast.Attribute):
            yield t.attr


# What ``in_place_write`` says writes: a method call, an augmented or a subscript assignment.
InPlaceWrite = Union[ast.Call, ast.AugAssign, ast.Assign]


def in_place_write(node: ast.AST) -> "TypeGuard[InPlaceWrite]":
    """``w.add_(1)``, ``w -= g``, ``w[0] = 0`` (not ``w.requires_grad_()``, ``w.detach_()``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return writes_in_place(node.func.attr)
    if isinstance(node, ast.AugAssign):
        return True
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets)


def written_by(node: InPlaceWrite) -> ast.expr:
    """What a write changes: ``self.w`` of ``self.w.clamp_()``, of ``self.w -= g``, of ``self.w[0] = 0``."""
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Attribute)  # a write: ``w.add_(...)``
        return node.func.value
    return node.target if isinstance(node, ast.AugAssign) else node.targets[0]


def imported_definition(origins: dict, callee: str) -> Optional[Tuple[str, int, str]]:
    """``(module, relative level, name)`` of the definition an imported ``callee`` names, for the
    project index to find, given what each local name was imported as (``origins``: local name
    -> (module, imported name or None for a module, level); either tree's imports give them).
    ``Net`` of ``from .model import Net`` -> ``("model", 1, "Net")``, ``model.Net`` of ``import
    model`` -> ``("model", 0, "Net")``; None for a module itself, a longer path, or a name no
    import binds."""
    head, _, rest = callee.partition(".")
    origin = origins.get(head)
    if origin is None or "." in rest:
        return None
    found = imported_module(origin, bool(rest))
    if found is None:
        return None
    return found[0], found[1], rest or origin[1]


def imported_module(origin: Tuple[str, Optional[str], int], dotted: bool) -> Optional[Tuple[str, int]]:
    """``(module, relative level)`` in which a name imported as ``origin`` ((module, imported name
    or None, level), as in ``imported_definition``) has the definition a call of it runs:
    ``from .model import Net`` then ``Net(...)`` -> ``("model", 1)``; ``from models import nets``
    then ``nets.Net(...)`` (``dotted``) -> ``("models.nets", 0)``; None for a call of a module."""
    module, name, level = origin
    if not dotted:
        return (module, level) if name is not None else None
    return (module if name is None else ".".join(p for p in (module, name) if p)), level
