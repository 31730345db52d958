"""The second gate: a look at the stdlib ``ast`` tree before paying for libcst.

The text gate (``Rule.gate``) lets through every file that merely mentions a
rule's markers: ``+=`` and ``loader`` are in most training files. libcst costs
about eight times what ``ast.parse`` does, so a rule whose findings need a
particular shape (a loop that stores values, code that calls ``backward``) can
look for that shape first (``Rule.needs_tree``). A gate answers "could this
rule find anything here?"; it may say yes too often, never no too often: tests
run every fixture and corpus file with and without it.

Walking a whole ast in Python costs more than parsing it in C, so the facts
are gathered from statements only, and expressions are read just where they
matter: inside loops, in loop headers and in code that runs at import time.
What the text can answer (is ``backward`` called at all?) is answered there.
flake8 hands its plugins the ast tree it already built, so there it is free.
"""
from __future__ import annotations

import ast
import bisect
from typing import Iterator, List, Optional, Tuple

from torchlint.model.leaves import FACTORIES, LEAF_WRAPPERS, SHAPE_METHODS
from torchlint.model.vocab import (
    FORWARD_METHODS, is_eval_function_name, is_eval_loader_name, is_loader_name, is_model_name, last_name,
)
from torchlint.text_gate import BACKWARD_CALL, EVAL_SWITCH_CALL, text_search

_NO_GRAPH_CALLS = FACTORIES | LEAF_WRAPPERS
_STORE_METHODS = frozenset(("append", "appendleft", "extend", "insert"))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
# A name can only be called where it is written; these read the text for it
# (through the text gate's substring shortcuts, shared with the rules' gates).
_COMPUTES_GRADIENTS = text_search(BACKWARD_CALL + r"|\bgrad\s*\(|vjp|torch\.autograd import")
_STEPS = text_search(r"\.step\(")
_EVAL_SWITCH = text_search(EVAL_SWITCH_CALL)
_TRAINING_HOOK = text_search(r"def training_step\b")


class TreeFacts:
    """What the tree gates ask, from one statement-level pass over an ast tree."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.source = source
        self.loops: List[Tuple[str, ast.AST]] = []  # (enclosing function name, loop)
        self.import_time: List[ast.AST] = []  # statements that run when the module is imported
        self.function_names: set = set()
        self.bodies: List[list] = [tree.body]  # the module's and every function's statements
        self.string_statements: List[Tuple[int, int]] = []  # (first, last line) of docstrings
        self._scan(tree.body, owner="", import_time=True)
        self._code_text: Optional[str] = None

    def code_text(self) -> str:
        """The source with the inner lines of docstrings (any bare string statement)
        blanked: ``>>> loss.backward()`` in a docstring is no call. Rules' text gates
        run on it again here. Only the lines strictly between a string statement's
        first and last are blanked, so no code that shares a line with one is; a
        source with ``\r`` line ends is left whole (its line numbers would need
        Python's own splitting)."""
        if self._code_text is None:
            self._code_text = self.source
            if self.string_statements and "\r" not in self.source:
                lines = self.source.split("\n")
                for first, last in self.string_statements:
                    lines[first:last - 1] = [""] * (last - 1 - first)  # 1-based, both kept
                self._code_text = "\n".join(lines)
        return self._code_text

    def _scan(self, body, owner: str, import_time: bool) -> None:
        for stmt in body:
            if isinstance(stmt, _FUNCTIONS):
                self.function_names.add(stmt.name)
                self.bodies.append(stmt.body)
                self._scan(stmt.body, stmt.name, False)
                continue
            if isinstance(stmt, _LOOPS):
                self.loops.append((owner, stmt))
            elif _is_long_string_statement(stmt):
                self.string_statements.append((stmt.lineno, stmt.end_lineno))
            if import_time and not isinstance(stmt, ast.ClassDef):
                self.import_time.append(stmt)
            for field in _BLOCK_FIELDS:  # a class body runs at import time too
                for child in getattr(stmt, field, None) or ():
                    # An except handler or a match case holds a block of its own.
                    self._scan([child] if isinstance(child, ast.stmt) else child.body, owner, import_time)

    # -- questions -------------------------------------------------------
    def computes_gradients(self) -> bool:
        return _COMPUTES_GRADIENTS(self.source)

    def trains(self) -> bool:
        """Might some code here backpropagate or step an optimizer?"""
        return _STEPS(self.source) or self.computes_gradients()

    def has_training_step(self) -> bool:
        return _TRAINING_HOOK(self.source)

    def loops_over_data(self) -> bool:
        """A loop over something loader-named (``for x, y in train_loader``)."""
        return any(is_loader_name(n) for _, loop in self.loops for n in _names(getattr(loop, "iter", None)))

    def loop_assigns(self, wanted) -> bool:
        """Does some loop body bind a name (``h`` of ``self.h``) that ``wanted`` accepts?"""
        for _, loop in self.loops:
            for node in _loop_nodes(loop):
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else ())
                if any(wanted(name) for t in targets for name in _bound_names(t)):
                    return True
        return False

    def iteration_stores(self) -> bool:
        """Could some loop be a training, data or evaluation iteration that stores values?"""
        trains = self.trains()
        for function, loop in self.loops:
            if function in FORWARD_METHODS:
                continue
            iteration = trains or is_eval_function_name(function) or any(
                is_loader_name(n) for n in _names(getattr(loop, "iter", None)))
            if iteration and any(_is_store(n) for n in _loop_nodes(loop)):
                return True
        return self.has_training_step()

    def evaluation_code(self) -> bool:
        """Code that switches a model to eval mode and runs it, or a loop that runs a
        model-named call over evaluation data or in a function named like evaluation."""
        return self.evaluation_switches() or self.evaluation_loops()

    def evaluation_switches(self) -> bool:
        """A function (or the module) that switches something to eval mode and calls
        it, ``self`` or a model-named callee: the calls ``FileModel.is_forward`` takes
        for forward passes, given the switched models."""
        if not _EVAL_SWITCH(self.code_text()):
            return False
        for body in self.bodies:
            switched, calls = set(), []
            for node in _own_nodes(body):
                if isinstance(node, ast.Call):
                    receiver = _eval_switch_receiver(node)
                    if receiver is not None:
                        switched.add(receiver)
                    else:
                        calls.append(node)
            if switched and any(_may_be_forward(c) or _forward_callee(c) in switched for c in calls):
                return True
        return False

    def evaluation_loops(self) -> bool:
        """A loop that runs a model-named call over evaluation data or in a function
        named like evaluation."""
        for function, loop in self.loops:
            if function in FORWARD_METHODS:
                continue
            evaluates = is_eval_function_name(function) or any(
                is_eval_loader_name(n) for n in _names(getattr(loop, "iter", None)))
            if evaluates and any(isinstance(n, ast.Call) and _may_be_forward(n) for n in _loop_nodes(loop)):
                return True
        return False

    def import_time_calls(self, *names: str) -> bool:
        """Does code that runs at import call one of ``names`` or a function of this file?"""
        wanted = self.function_names.union(names)
        return any(isinstance(n, ast.Call) and _called_name(n) in wanted
                   for stmt in self.import_time for n in _statement_nodes(stmt))

    def forces_requires_grad_on_computed(self) -> bool:
        """``x.requires_grad = True`` / ``x.requires_grad_()`` where ``x`` is a call's result:
        bound from a call in the same function, named like a loss, or the call itself."""
        lines = self._lines_with("requires_grad")
        for body in self.bodies:
            if not _spans_any(body, lines):
                continue  # most bodies: not worth a walk
            nodes = list(_own_nodes(body))
            forced = [target for target in map(_forced_requires_grad, nodes) if target is not None]
            if not forced:
                continue
            from_calls = {_dotted(t) for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign))
                          and n.value is not None and _may_compute(n.value)
                          for target in getattr(n, "targets", [getattr(n, "target", None)])
                          for t in _flat_targets(target)}
            for target in forced:
                path = _dotted(target)
                if path is None and _may_compute(target):
                    return True
                if path is not None and (path in from_calls or "loss" in path.lower()):
                    return True
        return False

    def _lines_with(self, text: str) -> List[int]:
        """The (1-based, sorted) numbers of the lines where ``text`` occurs."""
        lines, at, line, counted = [], self.source.find(text), 1, 0
        source = self.source
        while at >= 0:
            # Python ends lines at \n, \r\n and a lone \r.
            line += (source.count("\n", counted, at) + source.count("\r", counted, at)
                     - source.count("\r\n", counted, at))
            counted = at
            lines.append(line)
            at = source.find(text, at + 1)
        return lines

    def import_time_leaf_writes(self) -> bool:
        """A leaf made and written in place when the module runs (scripts, notebooks)."""
        nodes = [n for stmt in self.import_time for n in _statement_nodes(stmt)]
        return any(_is_inplace(n) for n in nodes) and any(_makes_leaf(n) for n in nodes)


# -- reading nodes -----------------------------------------------------------

def _own_nodes(nodes) -> Iterator[ast.AST]:
    """Every node of the scope ``nodes`` belong to: not into nested functions (scopes
    of their own), but into class bodies, which run where they are written."""
    todo = [node for node in nodes if not isinstance(node, _FUNCTIONS)]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, _FUNCTIONS))


def _is_long_string_statement(stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str) and (stmt.end_lineno or 0) - stmt.lineno >= 2)


def _spans_any(body: list, lines: List[int]) -> bool:
    """Does one of ``lines`` fall within the statements of ``body``?"""
    if not body:
        return False
    first = getattr(body[0], "lineno", 1)
    last = getattr(body[-1], "end_lineno", None) or 1 << 30
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and lines[at] <= last


def _loop_nodes(loop) -> Iterator[ast.AST]:
    return _own_nodes(loop.body + loop.orelse)


def _statement_nodes(stmt) -> Iterator[ast.AST]:
    """A statement's own expressions; the statements of its blocks are scanned on their own."""
    if isinstance(stmt, _LOOPS + (ast.If, ast.With, ast.AsyncWith, ast.Try)):
        yield stmt
        for field in ("target", "iter", "test", "items"):
            value = getattr(stmt, field, None)
            if value is not None:
                yield from _own_nodes(value if isinstance(value, list) else [value])
        return
    yield from _own_nodes([stmt])


def _called_name(call: ast.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _dotted(node) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _names(node) -> Tuple[str, ...]:
    if node is None:
        return ()
    return tuple(n.id if isinstance(n, ast.Name) else n.attr
                 for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute)))


def _bound_names(target) -> Iterator[str]:
    """``a``, ``h`` and ``c`` in ``a, (self.h, c) = ...``; nothing for ``d[k]``."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)
    elif isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Attribute):
        yield target.attr


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


def _flat_targets(target) -> list:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in _flat_targets(element)]
    if isinstance(target, ast.Starred):
        return _flat_targets(target.value)
    return [target]


def _forced_requires_grad(node):
    """The tensor of ``t.requires_grad = True`` or ``t.requires_grad_()``/``(True)``, else None."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                return target.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        flag = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
        if flag is None or (isinstance(flag, ast.Constant) and flag.value is True):
            return node.func.value
    return None


def _may_compute(expr) -> bool:
    """Could ``expr`` be a forward pass or a loss call, maybe reduced or moved, as
    ``leaves.produced_by_graph_call`` accepts: a call with an input, not a tensor
    factory (``torch.zeros(n)``) or leaf wrapper, before shape methods only."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in SHAPE_METHODS:
        expr = expr.func.value
    return isinstance(expr, ast.Call) and bool(expr.args) and _called_name(expr) not in _NO_GRAPH_CALLS


def _is_inplace(node) -> bool:
    """``w.add_(1)``, ``w -= g``, ``w[0] = 0``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        return attr.endswith("_") and not attr.startswith("_")
    if isinstance(node, ast.AugAssign):
        return True
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets)


def _makes_leaf(node) -> bool:
    """``nn.Parameter(...)``, ``requires_grad=True``, ``.requires_grad_()``, ``for p in m.parameters()``."""
    if isinstance(node, ast.Call):
        name = _called_name(node)
        return name in ("Parameter", "requires_grad_") or any(k.arg == "requires_grad" for k in node.keywords)
    if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call):
        return _called_name(node.iter) in ("parameters", "named_parameters")
    return False


def _may_be_forward(call: ast.Call) -> bool:
    """``model(x)``, ``self.net.module(x)``, ``self(x)``: what ``FileModel.is_forward`` can accept."""
    callee = _forward_callee(call)
    return callee is not None and (callee == "self" or is_model_name(last_name(callee)))


def _forward_callee(call: ast.Call) -> Optional[str]:
    """The model a call would run forward: ``model`` for ``model.module.forward(x)``."""
    callee = _dotted(call.func)
    while callee is not None and callee.endswith((".forward", ".module")):
        callee = callee.rsplit(".", 1)[0]
    return callee


def _eval_switch_receiver(call: ast.Call) -> Optional[str]:
    """``m`` of ``m.eval()``, ``m.train(False)``, ``m.train(mode=0)``: ``modes.mode_switch`` to eval."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("eval", "train"):
        return None
    if func.attr == "eval":
        return None if call.args or call.keywords else _dotted(func.value)
    flags = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    if len(flags) != 1 or not isinstance(flags[0], ast.Constant):
        return None
    value = flags[0].value
    return _dotted(func.value) if value is False or (type(value) is int and value == 0) else None
