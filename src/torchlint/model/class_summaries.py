"""Which classes of a project module compute the same thing in training and eval mode, told from its stdlib ``ast``.

``from model import Net`` then ``net(x)`` under ``no_grad`` with no ``net.eval()``: whether
the forgotten ``eval()`` matters depends on what ``Net`` is built from, in another module.
The project index (``model/project.py``) asks this once per module it reads, and the file
that builds the model reads the answer (``model/mode_effects.py``, where the same question
is answered for the file's own classes with libcst, from the same words in ``vocab.py``).

A class is mode-free only when all of it is seen: its bases are classes of the module judged
mode-free, or ``torch.nn.Module``; no method is its own ``train`` or ``eval`` or reads
``self.training``; and every call in its body is a torch.nn layer that ignores the mode
(``vocab.layer_mode_free``), a torch function whose name has no mode word, a mode-free class
or function of the module, a method (``self.conv(x)``, ``x.view(...)``), a builtin, or a local
bound only to its own submodules. Anything else (a library model, a class imported from
elsewhere, ``nn.Sequential(*layers)``, a dropout rate read from a config) may change.
"""
from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Set, Union

from torchlint.model.ast_reading import ast_dotted, flat_targets
from torchlint.model.names import qualified_through
from torchlint.model.vocab import (
    CALL, LITERAL, MODE_FREE_BUILTINS, NOT_A_LITERAL, SUBSCRIPT, layer_mode_free, names_submodules,
    torch_call_mode_free,
)

_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
# A method's local names and what binds them: an expression, or None where it is not an
# assignment or loop (``with ... as layer``, a parameter is not listed at all).
_Bindings = Dict[str, List[Optional[ast.expr]]]


def mode_free_classes(tree: ast.Module) -> frozenset:
    """The names of the module's top-level classes that surely ignore train/eval mode."""
    judge = _Judge(tree)
    return frozenset(name for name in judge.classes if judge.mode_free_class(name))


class _Judge:
    def __init__(self, tree: ast.Module) -> None:
        self.classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        self.functions: Dict[str, List[_Function]] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
        # Every import of the module, nested ones too: a name bound by any of them is not ours to judge.
        self.imported: Set[str] = set()
        self.torch: Dict[str, str] = {}  # local name -> torch's qualified name
        for imported in ast.walk(tree):
            if isinstance(imported, ast.Import):
                for alias in imported.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.imported.add(local)
                    target = alias.name if alias.asname else alias.name.split(".")[0]
                    if target.split(".")[0] == "torch":
                        self.torch[local] = target
            elif isinstance(imported, ast.ImportFrom):
                for alias in imported.names:
                    local = alias.asname or alias.name
                    self.imported.add(local)
                    if not imported.level and imported.module and imported.module.split(".")[0] == "torch":
                        self.torch[local] = f"{imported.module}.{alias.name}"
        self._classes: Dict[str, bool] = {}
        self._functions: Dict[str, bool] = {}

    def qualify(self, path: Optional[str]) -> Optional[str]:
        """``nn.Conv2d`` -> ``torch.nn.Conv2d``; None if not torch."""
        return qualified_through(self.torch, path)

    def mode_free_class(self, name: str) -> bool:
        if name not in self._classes:
            self._classes[name] = False  # a class built from itself: not followed
            self._classes[name] = self._class(self.classes[name])
        return self._classes[name]

    def _class(self, node: ast.ClassDef) -> bool:
        for base in node.bases:
            path = ast_dotted(base)
            if path is not None and path in self.classes:
                if not self.mode_free_class(path):
                    return False
            elif self.qualify(path) != "torch.nn.Module":
                return False  # a base from elsewhere may add dropout or read self.training
        for statement in node.body:
            if isinstance(statement, ast.ClassDef):
                return False  # a nested class: not followed
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if statement.name in ("train", "eval") or not self._code(statement, _bindings(statement)):
                    return False
            elif not self._code(statement, None):
                return False
        return True

    def mode_free_function(self, name: str) -> bool:
        """A function of the module (``make_layers(cfg)``) called from a class's methods."""
        if name not in self._functions:
            self._functions[name] = False  # recursion: not followed
            self._functions[name] = all(self._code(f, _bindings(f)) for f in self.functions[name])
        return self._functions[name]

    def _code(self, node: ast.AST, bindings: Optional[_Bindings]) -> bool:
        """No read of ``training`` and only calls that leave the mode irrelevant."""
        for child in ast.walk(node):
            if (isinstance(child, ast.Name) and child.id == "training") or (
                    isinstance(child, ast.Attribute) and child.attr == "training"):
                return False
            if isinstance(child, ast.Call) and not self.call(child, bindings):
                return False
        return True

    def call(self, call: ast.Call, bindings: Optional[_Bindings]) -> bool:
        callee = ast_dotted(call.func)
        qualified = self.qualify(callee)
        if qualified is not None:
            return torch_call_mode_free(qualified, lambda name: _layer_mode_free(name, call))
        if callee is not None and callee in self.classes:
            return self.mode_free_class(callee)
        if isinstance(call.func, ast.Attribute):
            # self.fc(x), out.view(...), super().__init__(); a function of an imported module is unknown.
            return callee is None or callee.split(".", 1)[0] not in self.imported
        if callee in MODE_FREE_BUILTINS:
            return True
        if callee is not None and callee in self.functions:
            return self.mode_free_function(callee)
        return bindings is not None and callee is not None and self.submodule_name(bindings, callee)

    def submodule_name(self, bindings: _Bindings, name: str) -> bool:
        """A local name bound only to the class's own submodules or torch layers:
        ``for conv in self.convs``, ``layer = self.layers[i]``, ``mp = nn.MaxPool2d(k)``."""
        values = bindings.get(name, [])
        return bool(values) and all(
            v is not None and names_submodules(_submodule_reading(v), self.qualify) for v in values)


def _bindings(func: _Function) -> _Bindings:
    """What each local name of ``func`` (nested code included) is bound to."""
    found: _Bindings = {}
    for node in ast.walk(func):
        for target, value in _bound(node):
            for single in flat_targets(target):
                if isinstance(single, ast.Name):
                    found.setdefault(single.id, []).append(value)
    return found


def _bound(node: ast.AST) -> Iterator[tuple]:
    """``(target, value)`` of each binding ``node`` makes; value None for a kind not followed."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield target, node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        yield node.target, node.iter
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        yield node.target, None if isinstance(node, ast.AugAssign) else node.value
    elif isinstance(node, ast.NamedExpr):
        yield node.target, None
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield node.optional_vars, None


def _submodule_reading(value: ast.AST) -> object:
    """``value`` as ``vocab.names_submodules`` reads it."""
    if isinstance(value, ast.Subscript):
        return SUBSCRIPT, _submodule_reading(value.value)
    path = ast_dotted(value)
    if path is not None:
        return path
    if isinstance(value, ast.Call):
        return CALL, ast_dotted(value.func), tuple(_submodule_reading(a) for a in value.args)
    return LITERAL if isinstance(value, ast.Constant) and type(value.value) in (int, str) else None


def _layer_mode_free(name: str, call: ast.Call) -> bool:
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return False

    def argument(word: str, position: int) -> Optional[str]:
        value: Optional[ast.expr] = next((k.value for k in call.keywords if k.arg == word), None)
        if value is None and position < len(call.args):
            value = call.args[position]
        if value is None:
            return None
        if isinstance(value, ast.Constant) and type(value.value) in (int, float):
            return repr(value.value)
        return NOT_A_LITERAL

    return layer_mode_free(name, argument)
