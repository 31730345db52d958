"""Which local names mean which torch objects: import and alias resolution.

Only imports are read (``import torch as T``, ``from torch import nn``,
``from torch.utils.checkpoint import checkpoint as ckpt``), which is all the
rules need and far cheaper than libcst's QualifiedNameProvider.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst

from torchlint.model.ast_reading import imported_definition
from torchlint.model.expr import dotted
from torchlint.model.vocab import OTHER_FRAMEWORKS, is_non_torch_module


def _module_path(node: Optional[cst.BaseExpression]) -> Optional[str]:
    return dotted(node) if node is not None else None


def from_import_bindings(node: cst.ImportFrom, module: str) -> dict:
    """``{local name: qualified name}`` for ``from module import a, b as c``."""
    bound: Dict[str, str] = {}
    if isinstance(node.names, cst.ImportStar):
        return bound
    for alias in node.names:
        name = dotted(alias.name)
        if name is None:
            continue
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        bound[local] = f"{module}.{name}"
    return bound


def qualified_through(aliases: Dict[str, str], path: Optional[str]) -> Optional[str]:
    """``path`` with its first name replaced by what ``aliases`` (local name -> qualified name)
    binds it to: ``T.nn.Linear`` -> ``torch.nn.Linear`` for ``{"T": "torch"}``; None if unbound."""
    if path is None:
        return None
    head, _, rest = path.partition(".")
    target = aliases.get(head)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


# What a forwarding lambda may do to its call's result and still be the same call to every
# keyword it passes on: move it (``lambda *a, **k: Variable(*a, **k).cuda()``).
_MOVES = frozenset(("cuda", "cpu", "to"))


def forwarded_callee(value: Optional[cst.BaseExpression]) -> Optional[str]:
    """``autograd.Variable`` for ``lambda *args, **kwargs: autograd.Variable(*args, **kwargs)``:
    the dotted callee a lambda hands all its arguments to, unchanged (in both branches of
    ``... if USE_CUDA else ...``, maybe moved to a device after). None for any other value."""
    if not isinstance(value, cst.Lambda):
        return None
    params = value.params
    star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
    double = params.star_kwarg.name.value if params.star_kwarg is not None else None
    if params.params or params.posonly_params or params.kwonly_params or star is None or double is None:
        return None
    callees = {_forwarding_call(branch, star, double) for branch in _branches(value.body)}
    return callees.pop() if len(callees) == 1 else None


def _branches(body: cst.BaseExpression) -> list:
    if isinstance(body, cst.IfExp):
        return _branches(body.body) + _branches(body.orelse)
    return [body]


def _forwarding_call(expr: cst.BaseExpression, star: str, double: str) -> Optional[str]:
    while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
           and expr.func.attr.value in _MOVES and isinstance(expr.func.value, cst.Call)):
        expr = expr.func.value
    if not isinstance(expr, cst.Call) or len(expr.args) != 2:
        return None
    first, second = expr.args
    if (first.star == "*" and isinstance(first.value, cst.Name) and first.value.value == star
            and second.star == "**" and isinstance(second.value, cst.Name) and second.value.value == double):
        return dotted(expr.func)
    return None


class TorchNames:
    def __init__(self) -> None:
        self.aliases: dict = {}  # local name -> qualified path, torch only
        self.imported_roots: set = set()
        self.bound_by_import: set = set()  # every local name an import binds
        self.imported: dict = {}  # local name -> qualified path, every absolute import
        # local name -> (module, imported name or None for a module, relative level): every
        # import, relative ones included, for finding the project module a name comes from.
        self.origins: dict = {}
        # (module, relative level) of each ``from module import *``, in the file's order.
        self.star_imports: list = []

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            path = _module_path(alias.name)
            if path is None:
                continue
            root = path.split(".", 1)[0]
            self.imported_roots.add(root)
            local = alias.asname.name if alias.asname is not None else None
            self.bound_by_import.add(local.value if isinstance(local, cst.Name) else root)
            if isinstance(local, cst.Name):
                self.imported[local.value] = path
                self.origins[local.value] = (path, None, 0)
            else:
                self.imported.setdefault(root, root)
                self.origins.setdefault(root, (root, None, 0))
            if root != "torch":
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = path
            else:
                self.aliases[root] = root

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.star_imports.append(((_module_path(node.module) or "") if node.module is not None else "",
                                      len(node.relative)))
        else:
            module = (_module_path(node.module) or "") if node.module is not None else ""
            for alias in node.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(local, cst.Name):
                    self.bound_by_import.add(local.value)
                    name = dotted(alias.name)
                    if name is not None:
                        self.origins[local.value] = (module, name, len(node.relative))
        if node.relative or node.module is None:
            return
        path = _module_path(node.module)
        if path is None:
            return
        root = path.split(".", 1)[0]
        self.imported_roots.add(root)
        if isinstance(node.names, cst.ImportStar):
            return
        bindings = from_import_bindings(node, path)
        self.imported.update(bindings)
        if root == "torch":
            self.aliases.update(bindings)

    def qualify(self, path: Optional[str]) -> Optional[str]:
        """``T.nn.functional.mse_loss`` -> ``torch.nn.functional.mse_loss``; None if not torch."""
        return qualified_through(self.aliases, path)

    def qualify_any(self, path: Optional[str]) -> Optional[str]:
        """Like ``qualify``, for any absolutely imported module (``models.resnet18`` ->
        ``torchvision.models.resnet18``); None for names no import binds."""
        return qualified_through(self.aliases, path) or qualified_through(self.imported, path)

    def qualify_vision(self, path: Optional[str]) -> Optional[str]:
        """``models.resnet50`` -> ``torchvision.models.resnet50``; None if not torchvision."""
        qualified = self.qualify_any(path)
        return qualified if qualified is not None and qualified.split(".", 1)[0] == "torchvision" else None

    def imported_from(self, callee: str) -> Optional[Tuple[str, int, str]]:
        """``(module, relative level, name)``: the definition an imported ``callee`` names, for the
        project index to find (``ast_reading.imported_definition``)."""
        return imported_definition(self.origins, callee)

    @property
    def imports_torch(self) -> bool:
        return bool(self.aliases) or "torch" in self.imported_roots

    @property
    def imports_only_other_modules(self) -> bool:
        """The file imports modules (``__future__`` aside), each of them a library that is not
        torch (``numpy``, ``jax``, the standard library): it names what it works with, and that is
        not torch. A file without imports (a snippet) is not one, nor one that imports a module of
        its project (``from tools import measure``), which may run a torch model for it."""
        if self.imports_torch:
            return False
        imported = [(module, level) for module, _, level in self.origins.values()
                    if level or module.split(".", 1)[0] != "__future__"]
        return bool(imported) and all(not level and is_non_torch_module(module) for module, level in imported)

    @property
    def foreign_framework(self) -> bool:
        """The file is written for another framework with a torch-like API."""
        return not self.imports_torch and bool(self.imported_roots & OTHER_FRAMEWORKS)

    @property
    def torch_alias(self) -> str:
        """The name ``torch`` is bound to here (``T`` after ``import torch as T``; ``torch`` itself
        where both are bound); fixes write it."""
        if self.aliases.get("torch") == "torch":
            return "torch"
        for local, path in self.aliases.items():
            if path == "torch":
                return local
        return "torch"
