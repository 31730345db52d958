"""Which functions of a project module could have an effect, told from the stdlib ``ast`` once.

``from .metrics import measure`` hides a forward pass, a loss or a retained backward in
another module of the project. What the function does is a fact of that module's libcst
model (``function_effects``), the same definitions a lint of it uses; the project index
(``model/project.py``) keeps, per function, only the syntax a fact needs to see, so that a
call site parses the module with libcst only when the answer may be something: a function
that writes none of its parameters in place is not parsed to be asked which it writes.
The tree gates read these too, before the calling file itself is parsed.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Tuple, Union

from torchlint.model.ast_reading import ast_dotted, grad_off_item, in_place_write, written_by
from torchlint.model.vocab import GRADIENT_CLIPS, calls_a_loss, last_name


@dataclass(frozen=True)
class FunctionSummary:
    """Admissions, not facts: the syntax a fact of ``function_effects`` needs to see."""

    # It calls one of its parameters (``model(x)``, ``model.module.forward(x)``), in any grad
    # mode: ``effects``' ``forwards`` may name some.
    calls_a_parameter: bool
    # It calls a torch loss function or a loss-named function (``F.cross_entropy``, ``criterion``):
    # ``effects``' ``returns_loss`` may say it returns one.
    may_return_loss: bool
    # It changes gradients (a clip, a ``.grad`` write) and has parameters: ``rewalked`` may say some.
    may_rewalk: bool
    # It writes one of its parameters in place (``t.add_(1)``, ``t -= g``, ``t[0] = 0``) outside
    # ``no_grad``, whatever binds the name later: ``written_in_place`` may say some.
    may_write_in_place: bool


def summarize_functions(tree: ast.Module) -> Dict[str, FunctionSummary]:
    return {node.name: summarize_function(node) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def summarize_function(func: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> FunctionSummary:
    names = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    grad_free = any(grad_off_item(d) for d in func.decorator_list)
    called: List[str] = []
    writes = False
    for node, off in _own_nodes(func.body, grad_free):  # one walk for every admission but ``may_rewalk``'s
        if isinstance(node, ast.Call):
            called.append(ast_dotted(node.func) or "")
        writes = writes or (not off and _writes_a_name_in(node, names))
    return FunctionSummary(
        calls_a_parameter=any(path.split(".", 1)[0] in names for path in called),
        may_return_loss=any(calls_a_loss(path) for path in called),
        may_rewalk=may_rewalk(func),
        may_write_in_place=writes,
    )


def _writes_a_name_in(node: ast.AST, names: set) -> bool:
    if not in_place_write(node):
        return False
    target = written_by(node)
    while isinstance(target, ast.Subscript):
        target = target.value
    return isinstance(target, ast.Name) and target.id in names


def _own_nodes(body: list, off: bool) -> Iterator[Tuple[ast.AST, bool]]:
    """(node, grad off) for every node of the function's own code, in source order;
    ``with torch.no_grad():`` turns grad off for its body (``ast_reading.grad_off_item``)."""
    for node in body:
        yield from _node_and_children(node, off)


def _node_and_children(node: ast.AST, off: bool) -> Iterator[Tuple[ast.AST, bool]]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return
    yield node, off
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            yield from _node_and_children(item.context_expr, off)
        yield from _own_nodes(node.body, off or any(grad_off_item(item.context_expr) for item in node.items))
        return
    for child in ast.iter_child_nodes(node):
        yield from _node_and_children(child, off)


# -- parameters walked twice --------------------------------------------------
def may_rewalk(func: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    """Has parameters and changes gradients (a clip, a ``.grad`` write): the syntax
    ``function_effects.rewalked`` needs to find a parameter walked twice."""
    return bool(func.args.posonlyargs or func.args.args) and any(
        _clips(n) or _writes_grad(n) for n in ast.walk(func))


def _clips(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and last_name(ast_dotted(node.func) or "") in GRADIENT_CLIPS


def _writes_grad(node: ast.AST) -> bool:
    """``p.grad.mul_(c)``, ``p.grad.data.clamp_(-v, v)``, ``p.grad = ...``, ``p.grad.data *= c``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_") \
            and not node.func.attr.startswith("_"):
        return (ast_dotted(node.func.value) or "").endswith((".grad", ".grad.data"))
    targets: List[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign):
        targets = [node.target]
    return any((ast_dotted(t) or "").endswith((".grad", ".grad.data")) for t in targets)
