"""The second gate: a look at the stdlib ``ast`` tree before paying for libcst.

The text gate (``Rule.gate``) lets through every file that merely mentions a
rule's markers: ``+=`` and ``batch_size`` are in every model file. libcst
costs about eight times what ``ast.parse`` does, so a rule whose findings need
a particular shape (a loop that stores values, code that calls ``backward``)
can look for that shape in the ast tree first (``Rule.needs_tree``). A gate
answers "could this rule find anything here?"; it may say yes too often, never
no too often: tests run every fixture and corpus file with and without it.

flake8 hands its plugins the ast tree it already built, so there it is free.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from torchlint.model.vocab import (
    FORWARD_METHODS, is_eval_function_name, is_eval_loader_name, is_loader_name, is_model_name, last_name,
)

_STORE_METHODS = frozenset(("append", "appendleft", "extend", "insert"))
# The model's scopes: a class body and a lambda belong to the code around them.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _called_name(call: ast.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _own_nodes(body):
    """Nodes of a statement list, not descending into nested functions or classes."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, _SCOPES))


def _is_store(node) -> bool:
    """``xs.append(v)``, ``total += v``, ``d[k] = v``, ``total = total + v``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr in _STORE_METHODS
    if isinstance(node, ast.AugAssign):
        return True
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Subscript) for t in node.targets) or isinstance(node.value, ast.BinOp)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Subscript) or isinstance(node.value, ast.BinOp)
    return False


def _is_inplace(node) -> bool:
    """``w.add_(1)``, ``w -= g``, ``w[0] = 0``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        return attr.endswith("_") and not attr.startswith("_")
    if isinstance(node, ast.AugAssign):
        return True
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets)


def _dotted(node) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _may_be_forward(call: ast.Call) -> bool:
    """``model(x)``, ``self.net.module(x)``, ``self(x)``: what ``FileModel.is_forward`` can accept."""
    callee = _dotted(call.func)
    if callee is None:
        return False
    while callee.endswith((".forward", ".module")):
        callee = callee.rsplit(".", 1)[0]
    return callee == "self" or is_model_name(last_name(callee))


def _switches_to_eval(call: ast.Call) -> bool:
    """``model.eval()`` (no arguments: not TensorFlow's) or ``model.train(False)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "eval":
        return not call.args and not call.keywords
    if func.attr == "train" and call.args:
        return isinstance(call.args[0], ast.Constant) and call.args[0].value is False
    return False


class TreeFacts:
    """What the tree gates ask, each computed on first use from one ast tree."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self._call_names: Optional[frozenset] = None
        self._store_loops: Optional[List[Tuple[str, Tuple[str, ...]]]] = None
        self._functions: Optional[List[ast.AST]] = None

    @property
    def functions(self) -> list:
        if self._functions is None:
            self._functions = [n for n in ast.walk(self.tree)
                               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return self._functions

    @property
    def call_names(self) -> frozenset:
        """The last name of every callee: ``backward`` for ``loss.backward()``."""
        if self._call_names is None:
            self._call_names = frozenset(
                name for name in (_called_name(n) for n in ast.walk(self.tree) if isinstance(n, ast.Call)) if name
            )
        return self._call_names

    def calls(self, *names: str) -> bool:
        return any(name in self.call_names for name in names)

    def defines(self, name: str) -> bool:
        return any(f.name == name for f in self.functions)

    @property
    def store_loops(self) -> list:
        """(function name, names in the loop's iterable) for each loop whose body stores a value."""
        if self._store_loops is None:
            found = []
            for owner, body in self.scopes():
                for node in _own_nodes(body):
                    if isinstance(node, _LOOPS) and any(_is_store(n) for n in _own_nodes(node.body + node.orelse)):
                        found.append((owner, _names(getattr(node, "iter", None))))
            self._store_loops = found
        return self._store_loops

    @property
    def imports_autograd_names(self) -> bool:
        """``from torch.autograd import grad as g``: calls we cannot see by name."""
        return any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.autograd")
                   for n in ast.walk(self.tree))

    def computes_gradients(self) -> bool:
        return self.calls("backward", "manual_backward", "grad", "vjp") or self.imports_autograd_names

    def scopes(self):
        """(name, statements) of the module and of every function, as the model scopes them."""
        yield "", self.tree.body
        for f in self.functions:
            yield f.name, f.body

    def evaluation_code(self) -> bool:
        """A scope that switches a model to eval mode, loops over evaluation data,
        or is named like evaluation and loops."""
        for name, body in self.scopes():
            if name in FORWARD_METHODS:
                continue
            evaluates = is_eval_function_name(name)
            for node in _own_nodes(body):
                if isinstance(node, ast.Call) and _switches_to_eval(node):
                    return True
                if isinstance(node, _LOOPS) and (evaluates or any(
                        is_eval_loader_name(n) for n in _names(getattr(node, "iter", None)))):
                    # Without an eval() switch only a model-named call counts as a forward.
                    if any(isinstance(n, ast.Call) and _may_be_forward(n) for n in _own_nodes(node.body)):
                        return True
        return False

    def iteration_stores(self) -> bool:
        """Could some loop be a training, data or evaluation iteration that stores values?"""
        trains = self.calls("step") or self.computes_gradients()
        for function, iter_names in self.store_loops:
            if function in FORWARD_METHODS:
                continue
            if trains or is_eval_function_name(function) or any(is_loader_name(n) for n in iter_names):
                return True
        return self.defines("training_step")

    def module_level_leaf_writes(self) -> bool:
        """A leaf made and written in place at import time (scripts, notebooks)."""
        nodes = list(_own_nodes(self.tree.body))
        return any(_is_inplace(n) for n in nodes) and any(_makes_leaf(n) for n in nodes)


def _makes_leaf(node) -> bool:
    """``nn.Parameter(...)``, ``requires_grad=True``, ``.requires_grad_()``, ``for p in m.parameters()``."""
    if isinstance(node, ast.Call):
        name = _called_name(node)
        return name in ("Parameter", "requires_grad_") or any(k.arg == "requires_grad" for k in node.keywords)
    if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call):
        return _called_name(node.iter) in ("parameters", "named_parameters")
    return False


def _names(node) -> Tuple[str, ...]:
    if node is None:
        return ()
    return tuple(n.id if isinstance(n, ast.Name) else n.attr
                 for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute)))
