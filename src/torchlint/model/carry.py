"""Graph flow from chosen names: where does the graph a given name holds end up?

Taint (``taint.py``) asks "does this value carry *a* graph?"; TL303 and TL304
need "does *this* name's graph flow into that value?". An RNN state is
carried across iterations when the new state is computed from the old one
(``out, h = model(x, h)``) and nothing in the iteration cuts the link
(``h.detach()``, ``repackage_hidden(h)``, re-initialising it). A meter keeps
a graph when its ``update(val)`` sums ``val`` into ``self``.

Flow is read as TL301's taint is: ``.item()``, ``.detach()``, ``.data`` and
the like end it; functions we cannot read are assumed to end it, since a
missed finding costs less than a false alarm.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple, Union

import libcst as cst

from torchlint.model import vocab
from torchlint.model.expr import bound_paths, dotted
from torchlint.model.grad import GradMode
from torchlint.model.vocab import KILL_ATTRS, KILL_BUILTINS, KILL_METHODS, KILL_TORCH, PROPAGATE_BUILTINS

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, CallSite, Loop, Scope
    from torchlint.model import FileModel

# How a value relates to the names followed: not at all, through views and
# arithmetic only, or through a call that builds new graph on top of it.
NONE, FLOWS, NEW_GRAPH = 0, 1, 2

_CUT_METHODS = KILL_METHODS | {"detach_"}
# Names of recurrent modules: ``self.lstm(x, h)``, ``rnn(x, h)``, ``self.gru_cell(x, h)``.
_RECURRENT_WORDS = ("rnn", "lstm", "gru")
_RECURRENT_TOKENS = frozenset(("cell", "rnncell", "lstmcell", "grucell"))
# Names of recurrent state: ``hidden``, ``h``, ``(h, c)``, ``hx``, ``dec_state``.
# Memories (Transformer-XL ``mems``) are left out: those models detach them themselves.
_STATE_TOKENS = frozenset(
    "hidden hiddens hid hids h hx hn h0 ht c cx cn c0 ct hc state states carry".split()
)


def is_state_name(path: str) -> bool:
    """``hidden``, ``self.h``, ``dec_hidden``, ``lstm_state``: a name for recurrent state."""
    toks = vocab.tokens(vocab.last_name(path))
    return bool(toks) and any(t in _STATE_TOKENS for t in toks)


def is_recurrent_call(call: CallSite) -> bool:
    last = vocab.last_name(call.callee or "").lower()
    return any(w in last for w in _RECURRENT_WORDS) or any(t in _RECURRENT_TOKENS for t in vocab.tokens(last))


class Flow:
    """Follows the graph held by some names through one file's expressions."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self._helpers: dict = {}

    # -- expressions ---------------------------------------------------
    def level(self, expr: Optional[cst.CSTNode], paths: dict) -> int:
        """How ``expr`` depends on ``paths`` ({path: level}): NONE, FLOWS or NEW_GRAPH."""
        if expr is None:
            return NONE
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t in (cst.Name, cst.Attribute):
            path = dotted(e)
            if path is not None and path in paths:
                return paths[path]
            if t is cst.Attribute:
                return NONE if e.attr.value in KILL_ATTRS else self.level(e.value, paths)
            return NONE
        if t is cst.Call:
            return self._call_level(e, paths)
        if t in (cst.Subscript, cst.StarredElement, cst.Await):
            return self.level(getattr(e, "value", None) or getattr(e, "expression", None), paths)
        if t is cst.BinaryOperation:
            return max(self.level(e.left, paths), self.level(e.right, paths))
        if t is cst.UnaryOperation:
            return NONE if isinstance(e.operator, cst.Not) else self.level(e.expression, paths)
        if t is cst.IfExp:
            return max(self.level(e.body, paths), self.level(e.orelse, paths))
        if t in (cst.Tuple, cst.List, cst.Set):
            return max((self.level(el.value, paths) for el in e.elements), default=NONE)
        if t is cst.Dict:
            return max((self.level(el.value, paths) for el in e.elements
                        if isinstance(el, cst.DictElement)), default=NONE)
        if t in (cst.ListComp, cst.GeneratorExp, cst.SetComp):
            inner = self.level(e.for_in.iter, paths)
            if inner:  # [h.detach() for h in hidden] ends it; [h for h in hidden] does not
                paths = {**paths, **{p: inner for p in bound_paths(e.for_in.target)}}
            return self.level(e.elt, paths)
        return NONE  # literals, comparisons, f-strings, lambdas

    def _call_level(self, expr: cst.Call, paths: dict) -> int:
        func = expr.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in _CUT_METHODS:
                return NONE
            receiver = self.level(func.value, paths)
            if receiver:  # h.to(device), h.view(...), out.chunk(2)
                return receiver
        call = self.file_model.call_of(expr)
        if call is None or self.file_model.grad_at(call.site) is GradMode.NO_GRAD:
            return NONE
        args = max((self.level(arg.value, paths) for arg in expr.args), default=NONE)
        if not args:
            return NONE
        file_model = self.file_model
        qualified = file_model.qualify(call)
        if qualified is not None:
            return args if vocab.last_name(qualified) not in KILL_TORCH else NONE
        if call.callee in KILL_BUILTINS:
            return NONE
        if call.callee in PROPAGATE_BUILTINS:
            return args
        if file_model.is_forward(call) or file_model.is_submodule_forward(call) or is_recurrent_call(call):
            return NEW_GRAPH
        target = file_model.resolve(call)
        if target is not None and target is not call.scope:
            return self._helper_level(call, target, paths)
        return NONE  # a function we cannot read (an imported repackage_hidden)

    # -- same-module helpers -------------------------------------------
    def _helper_level(self, call: CallSite, target: Scope, paths: dict) -> int:
        """Does the helper hand the graph of the arguments we follow back to its caller?"""
        seeds = []
        offset = 1 if target.class_name is not None and (call.callee or "").startswith(("self.", "cls.")) else 0
        index = 0
        for arg in call.node.args:
            if arg.star:
                return NONE  # *args: cannot map arguments to parameters
            if arg.keyword is not None:
                name = arg.keyword.value
            else:
                if offset + index >= len(target.params):
                    return NONE
                name = target.params[offset + index]
                index += 1
            level = self.level(arg.value, paths)
            if level:
                seeds.append((name, level))
        key = (id(target), tuple(sorted(seeds)))
        if key not in self._helpers:
            self._helpers[key] = NONE  # recursion guard
            derived = self.follow(target.assignments, dict(seeds))
            self._helpers[key] = max((self.level(value, derived) for _, value in target.returns), default=NONE)
        return self._helpers[key]

    # -- statements ----------------------------------------------------
    def follow(self, assignments: List[Assignment], seeds: dict, on_bind: Optional[Callable[..., Any]] = None) -> dict:
        """Replay ``assignments`` in source order from ``seeds``; the names that hold the
        followed graph at the end. ``on_bind(a, path, level)`` sees every rebinding."""
        derived = dict(seeds)
        for a in assignments:
            self.step(a, derived, on_bind)
        return derived

    def step(self, a: Assignment, derived: dict, on_bind: Optional[Callable[..., Any]] = None) -> None:
        """Apply one assignment to ``derived`` ({path: level}) in place."""
        if a.kind == "aug":
            path = dotted(a.targets[0])
            level = self.level(a.value, derived)
            if path is not None and level:
                derived[path] = max(level, derived.get(path, NONE))
                if on_bind is not None:
                    on_bind(a, path, derived[path])
            return
        level = self.level(a.value, derived) if a.kind != "del" else NONE
        if a.kind == "for" and level:
            level = FLOWS  # for h in hidden: the elements, not new graph
        for target in a.targets:
            if isinstance(target, cst.Subscript):
                continue  # d[k] = v changes d, not what d is
            for path in bound_paths(target):
                if level:
                    derived[path] = level
                else:
                    derived.pop(path, None)
                if on_bind is not None:
                    on_bind(a, path, level)


def carried_states(file_model: FileModel, flow: Flow, scope: Scope, span: Union[Loop, Scope]) -> list:
    """(assignment, path) for each recurrent state ``span`` carries from one iteration to the next.

    ``span`` is a loop of ``scope``, or ``scope`` itself for a hook such as
    Lightning's ``training_step`` (one iteration of a loop we cannot see; only
    ``self.`` state outlives it). The state must be bound before the span,
    every rebinding inside must keep the old state's graph, and one of them
    must build new graph on it (``out, h = model(x, h)``). Any cut (a detach,
    a re-initialisation, an in-place ``detach_()``) anywhere in the span keeps
    it silent: that is truncated BPTT done on purpose.
    """
    inside = [a for a in scope.assignments if span.contains(a.order)]
    if any(c.method == "detach_" for c in scope.calls if span.contains(c.order)):
        return []
    found, seen = [], set()
    for a in inside:
        if a.kind != "assign":
            continue
        for path in (p for t in a.targets for p in bound_paths(t)):
            if path in seen or not is_state_name(path) or not _bound_before(file_model, scope, span, path):
                continue
            seen.add(path)
            events: List[Tuple[Assignment, int]] = []

            def record(b: Assignment, p: str, level: int) -> None:
                if p == path:
                    events.append((b, level))

            flow.follow(inside, {path: FLOWS}, record)
            if not all(level for _, level in events):
                continue
            built = [b for b, level in events if level == NEW_GRAPH and b.kind == "assign"]
            if built and not _reset_elsewhere(file_model, scope, span, path):
                found.append((built[0], path))
    return found


def _bound_before(file_model: FileModel, scope: Scope, span: Union[Loop, Scope], path: str) -> bool:
    if path.startswith("self."):
        return True
    if span is scope:
        return False  # a local of a hook does not outlive the call
    if path.split(".", 1)[0] in scope.params:
        return True
    return any(a.order < span.start and path in (p for t in a.targets for p in bound_paths(t))
               for a in scope.assignments)


def _reset_elsewhere(file_model: FileModel, scope: Scope, span: Union[Loop, Scope], path: str) -> bool:
    """Another function rebinds ``self.`` state: a helper the iteration calls
    (``self.reset_hidden()``) or, for a hook, any other method of its class
    (a framework may call ``on_train_batch_start`` between steps)."""
    if not path.startswith("self."):
        return False
    if span is scope:
        others = [a for (cls, name), method in file_model.methods.items()
                  if cls == scope.class_name and method is not scope and name != "__init__"
                  for a in method.assignments]
    else:
        others = [a for a in file_model.reachable_assignments(span) if a.site.scope is not scope]
    return any(path in (p for t in a.targets for p in bound_paths(t)) for a in others)
