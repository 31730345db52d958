"""What happens to ``.grad`` within one training iteration.

``backward()`` writes the gradients, a clip rescales them in place, a
GradScaler's ``unscale_`` divides them by the loss scale, ``step()`` reads
them and ``zero_grad()`` erases them. Whether a clip or a step does what its
author meant depends on where it stands among those events, so this module
lists them for one iteration (a loop body, or a function that is one
training step) with the control flow around each: which ``if`` branch it is
in, so that ``if amp: scaler.scale(loss).backward() else: loss.backward()``
is two alternatives and not two backward passes.

Every question here is asked only of files that clip gradients or use a
GradScaler, so the extra walk over a scope's statements is paid rarely.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple, Union

import libcst as cst

from torchlint.model import vocab
from torchlint.model.expr import dotted, keyword, literal_bool, positional
from torchlint.model.function_effects import positional_and_keyword_params, positional_params, rewalked
from torchlint.model.project_calls import project_callee
from torchlint.model.records import CallSite, Loop, Scope
from torchlint.model.tree import COMPREHENSIONS

if TYPE_CHECKING:
    from torchlint.model.records import Assignment
    from torchlint.model import FileModel

# torch's in-place gradient clips, by qualified name (``clip_grad_norm`` is the
# deprecated spelling of ``clip_grad_norm_``; ``clip_grads_with_norm_`` is 2.6's
# second half of a split clip).
TORCH_CLIPS = frozenset(
    f"{module}.{name}" for module in ("torch.nn.utils", "torch.nn.utils.clip_grad") for name in vocab.GRADIENT_CLIPS
)
# Calls that read their argument to the end; a generator passed to one is spent.
_CONSUMERS = frozenset("list tuple set sorted sum min max any all enumerate zip".split())
# What hands back a one-shot iterator over its arguments: stored, it is empty the second time.
_ONE_SHOT_BUILTINS = frozenset(("filter", "map", "iter"))
_ONE_SHOT_ITERTOOLS = frozenset(("itertools.chain", "itertools.chain.from_iterable"))

Span = Union[Loop, Scope]


# -- the calls ------------------------------------------------------------------

def clip_kind(file_model: FileModel, call: CallSite) -> Optional[str]:
    """``"torch"`` for torch's own gradient clips (any import spelling); ``"other"`` for
    another library's in-place clip of the same name (``accelerator.clip_grad_norm_``,
    FSDP's ``model.clip_grad_norm_``); None for anything else."""
    if file_model.qualify(call) in TORCH_CLIPS:
        return "torch"
    if call.method in ("clip_grad_norm_", "clip_grad_value_") and file_model.resolve(call) is None:
        return "other"
    return None


def clipped_parameters(call: CallSite) -> Optional[cst.BaseExpression]:
    return positional(call.node, 0) or keyword(call.node, "parameters")


def measures_only(file_model: FileModel, call: CallSite) -> bool:
    """``clip_grad_norm_(params, float("inf"))`` or ``1e9``: a clip with no real limit, called
    for the norm it returns."""
    limit = positional(call.node, 1) or keyword(call.node, "max_norm") or keyword(call.node, "clip_value")
    if isinstance(limit, (cst.Integer, cst.Float)):
        return limit.evaluated_value >= 1e4
    return limit is not None and "inf" in file_model.module.code_for_node(limit).lower()


def _scaler_constructions(file_model: FileModel) -> dict:
    """``{path: enabled}`` for each name bound to a ``GradScaler(...)``: enabled is False
    only when every construction says ``enabled=False`` literally."""
    found: dict = {}
    for a in file_model.assignments:
        value = a.value
        if a.kind == "assign" and isinstance(value, cst.IfExp):  # GradScaler() if amp else None
            value = value.body if isinstance(value.body, cst.Call) else value.orelse
        if a.kind != "assign" or not isinstance(value, cst.Call):
            continue
        callee = dotted(value.func) or ""
        if not vocab.last_name(callee).endswith("GradScaler") or callee in file_model.class_bases:
            continue  # not a GradScaler, or this file's own class of that name
        enabled = literal_bool(keyword(value, "enabled")) is not False
        for path in filter(None, map(dotted, a.targets)):
            found[path] = found.get(path, False) or enabled
    return found


def grad_scaler_state(file_model: FileModel, path: Optional[str]) -> Optional[str]:
    """``"on"`` for a GradScaler that may be enabled, ``"off"`` for one built with
    ``enabled=False``, None for something else.

    Found by construction; where none is visible (a scaler handed in as an
    argument), by name (``scaler``, ``self.grad_scaler``) together with a method
    only GradScaler has (``scale``, ``unscale_``) called on the same name, unless
    the file writes a scaler class of its own with such methods.
    """
    if path is None:
        return None
    built = file_model.derived(_scaler_constructions)
    if path in built:
        return "on" if built[path] else "off"
    if "scaler" not in vocab.last_name(path).lower() or file_model.derived(_defines_scaler_methods):
        return None  # a scaler class written here may have the same method names and other rules
    return "on" if path in file_model.derived(_scaler_api_receivers) else None


def _defines_scaler_methods(file_model: FileModel) -> bool:
    return any(name in ("scale", "unscale_") for _, name in file_model.methods)


def _scaler_api_receivers(file_model: FileModel) -> frozenset:
    return frozenset(c.receiver for c in file_model.calls if c.method in ("scale", "unscale_") and c.receiver)


def scaled_backward_scaler(file_model: FileModel, call: CallSite) -> Optional[str]:
    """The enabled GradScaler of ``scaler.scale(loss).backward()``, else None."""
    if call.method != "backward" or not isinstance(call.node.func, cst.Attribute):
        return None
    inner = call.node.func.value
    if not (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale"):
        return None
    scaler = dotted(inner.func.value)
    return scaler if grad_scaler_state(file_model, scaler) == "on" else None


def scaler_step(file_model: FileModel, call: CallSite) -> Optional[str]:
    """The enabled GradScaler of ``scaler.step(optimizer)``, else None."""
    if call.method != "step" or not call.node.args:
        return None
    return call.receiver if grad_scaler_state(file_model, call.receiver) == "on" else None


# -- control flow around each call ----------------------------------------------

@dataclass(frozen=True)
class Frame:
    """One control statement between a scope's body and a call: the ``if`` branch, loop
    body, ``try`` part, lambda or comprehension it runs in."""

    kind: str  # if, match, loop, try, lambda
    node: int  # id of the statement
    branch: object  # if: True (body) / False (else); match: case index; try: "body" / "other"
    test: Optional[tuple] = None  # if: (condition text, polarity), for ifs on the same condition

    @property
    def conditional(self) -> bool:
        return not (self.kind == "try" and self.branch == "body")


def _condition(file_model: FileModel, test: cst.BaseExpression) -> tuple:
    """``("amp", True)`` for ``amp``, ``amp is not None``, ``amp == True``; ``("amp", False)``
    for ``not amp``, ``amp is None``: two ifs on the same name take the same branch."""
    polarity = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, polarity = test.expression, not polarity
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        right = comp.comparator
        if isinstance(right, cst.Name) and right.value in ("None", "True", "False"):
            negated = isinstance(comp.operator, (cst.IsNot, cst.NotEqual))
            if right.value in ("None", "False"):
                negated = not negated
            test, polarity = test.left, polarity != negated
    text = " ".join(file_model.module.code_for_node(test).split())
    return text, polarity


_CONDITIONAL_EXPRESSIONS = (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp, cst.IfExp,
                            cst.BooleanOperation)


def frames_of(file_model: FileModel, call: CallSite) -> tuple:
    """The frames between ``call`` and its scope's body, outermost first; ``()`` for a call
    outside that body (a decorator, a default, a class body, a ``for`` target)."""
    return file_model.derived(_frames_above, call.node, call.scope.node)


def _frames_above(file_model: FileModel, node: cst.CSTNode, scope_node: cst.CSTNode) -> tuple:
    frames = []
    child, parent = node, file_model.parents.get(id(node))
    while parent is not None and parent is not scope_node:
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return ()  # another scope's
        frame = _frame(file_model, parent, child)
        if frame is _OUTSIDE:
            return ()
        if frame is not None:
            frames.append(frame)
        child, parent = parent, file_model.parents.get(id(parent))
    if parent is None or (isinstance(scope_node, cst.FunctionDef) and child is not scope_node.body):
        return ()
    return tuple(reversed(frames))


_OUTSIDE = Frame("outside", 0, None)  # a part of a statement no frame covers: a ``for`` target


def _frame(file_model: FileModel, parent: cst.CSTNode, child: cst.CSTNode) -> Optional[Frame]:
    """The frame ``parent`` puts around its part ``child``: None for a part that always runs
    (an ``if``'s test, a loop's head)."""
    if isinstance(parent, cst.If):
        if child is parent.test:
            return None
        return Frame("if", id(parent), child is parent.body, file_model.derived(_condition, parent.test))
    if isinstance(parent, (cst.For, cst.While)):
        if child is parent.body:
            return Frame("loop", id(parent), "body")
        if child is parent.orelse:
            return Frame("loop", id(parent), "else")
        head = parent.iter if isinstance(parent, cst.For) else parent.test
        return None if child is head else _OUTSIDE
    if isinstance(parent, cst.Match):
        if child is parent.subject:
            return None
        return Frame("match", id(parent), next(i for i, case in enumerate(parent.cases) if case is child))
    if isinstance(parent, cst.Try):
        return Frame("try", id(parent), "body" if child is parent.body else "other")
    if isinstance(parent, _CONDITIONAL_EXPRESSIONS):
        return Frame("lambda", id(parent), None)
    return None


def frames_within(file_model: FileModel, call: CallSite, span: Span) -> tuple:
    """The frames of ``call`` inside ``span``'s body (after the loop's own frame)."""
    frames = frames_of(file_model, call)
    if isinstance(span, Loop):
        for i, frame in enumerate(frames):
            if frame.node == id(span.node):
                return frames[i + 1:]
    return frames


def unconditional(file_model: FileModel, call: CallSite, span: Span) -> bool:
    """Runs on every pass through ``span`` (no ``if``, inner loop or handler around it there)."""
    return not any(frame.conditional for frame in frames_within(file_model, call, span))


def exclusive(file_model: FileModel, a: CallSite, b: CallSite) -> bool:
    """``a`` and ``b`` never run in the same pass: the two branches of one ``if``, or of two
    ``if``s on the same condition (``if amp: ... else: ...`` twice)."""
    branches_b = [f for f in frames_of(file_model, b) if f.kind in ("if", "match")]
    for fa in frames_of(file_model, a):
        if fa.kind not in ("if", "match"):
            continue
        for fb in branches_b:
            if fa.node == fb.node and fa.branch != fb.branch:
                return True
            if fa.kind == fb.kind == "if" and fa.node != fb.node and fa.test[0] == fb.test[0] \
                    and (fa.branch == fa.test[1]) != (fb.branch == fb.test[1]):
                return True
    return False


def alternative_to(file_model: FileModel, call: CallSite, others: List) -> bool:
    """``call`` sits in one branch of an ``if`` whose other branch holds one of ``others``:
    the author chose between them on a condition we may not be able to read."""
    return any(exclusive(file_model, call, other) for other in others)


# -- one iteration's events -----------------------------------------------------

@dataclass(frozen=True)
class GradEvent:
    """A call that touches the gradients: ``kind`` is backward, step, clear, clip,
    unscale or opaque (a same-module helper doing several of these, or code elsewhere
    handed the optimizer or the scaler)."""

    kind: str
    call: CallSite
    scaler: Optional[str] = None  # backward: the GradScaler that scaled the loss; step: the one stepping


def _helper_kind(file_model: FileModel, call: CallSite) -> Optional[str]:
    target = file_model.resolve(call)
    if target is None:
        return None
    kinds = {_own_kind(file_model, c) for c in file_model.reachable_calls(target)} - {None}
    if not kinds:
        return None
    return kinds.pop() if len(kinds) == 1 else "opaque"


def _own_kind(file_model: FileModel, call: CallSite) -> Optional[str]:
    if file_model.is_backward(call):
        return "backward"
    if file_model.stepped_optimizer(call):
        return "opaque" if file_model.is_closure_step(call) else "step"
    if file_model.clears_grad(call):
        return "clear"
    if clip_kind(file_model, call):
        return "clip"
    if call.method == "unscale_":
        return "unscale"
    return None


def _hands_off(file_model: FileModel, call: CallSite) -> bool:
    """Code we cannot see gets the optimizer or a scaler, and may step or clear with it."""
    if file_model.resolve(call) is not None or file_model.qualify(call) is not None:
        return False
    for arg in call.node.args:
        path = dotted(arg.value)
        if file_model.is_optimizer(path) or grad_scaler_state(file_model, path) is not None:
            return True
    return False


def event_of(file_model: FileModel, call: CallSite) -> Optional[GradEvent]:
    kind = _own_kind(file_model, call) or _helper_kind(file_model, call)
    if kind is None and _hands_off(file_model, call):
        kind = "opaque"
    if kind is None:
        return None
    scaler = None
    if kind == "backward":
        scaler = scaled_backward_scaler(file_model, call)
    elif kind == "step":
        scaler = scaler_step(file_model, call)
    return GradEvent(kind, call, scaler)


def _events(file_model: FileModel, span: Span) -> tuple:
    calls = span.scope.calls if isinstance(span, Loop) else span.calls
    return tuple(filter(None, (event_of(file_model, c) for c in calls if span.contains(c.order))))


def iteration_events(file_model: FileModel, span: Span) -> tuple:
    """The gradient events of one pass through ``span`` (a loop, or a function taken as one
    training step), in source order, calls of nested functions left out."""
    return file_model.derived(_events, span)


def iteration_of(call: CallSite) -> Optional[Span]:
    """The innermost loop around ``call`` in its scope, else its function; None at module level
    outside loops (a script's one-off step is no iteration)."""
    if call.site.loop is not None:
        return call.site.loop
    return None if call.scope.is_module else call.scope


def last_before(file_model: FileModel, events: Tuple[GradEvent, ...], call: CallSite,
                kinds: Tuple[str, ...]) -> Optional[GradEvent]:
    """The last event of ``kinds`` before ``call`` that can run in the same pass as it."""
    for event in reversed(events):
        if event.call.order < call.order and event.kind in kinds and not exclusive(file_model, event.call, call):
            return event
    return None


def reaching(file_model: FileModel, events: Tuple[GradEvent, ...], call: CallSite, kinds: Tuple[str, ...]) -> list:
    """The events of ``kinds`` whose effect ``call`` may see: going back from ``call``, each
    one that can run in the same pass, until one that runs whenever ``call`` does
    (``if amp: scaled backward / else: plain backward`` reaches a later clip twice)."""
    found = []
    for event in reversed(events):
        if event.call.order >= call.order or event.kind not in kinds or exclusive(file_model, event.call, call):
            continue
        found.append(event)
        if runs_whenever(file_model, event.call, call):
            break
    return found


def runs_whenever(file_model: FileModel, a: CallSite, b: CallSite) -> bool:
    """Every ``if``, loop and handler around ``a`` is also around ``b``: where ``b`` runs, ``a`` ran
    (or runs) in the same pass."""
    around_b = set(frames_of(file_model, b))
    return all(f in around_b for f in frames_of(file_model, a) if f.conditional)


def between(file_model: FileModel, events: Tuple[GradEvent, ...], first: CallSite, last: CallSite,
            kinds: Tuple[str, ...]) -> list:
    """Events of ``kinds`` after ``first`` and before ``last`` that can run with both."""
    return [e for e in events if first.order < e.call.order < last.order and e.kind in kinds
            and not exclusive(file_model, e.call, first) and not exclusive(file_model, e.call, last)]


def stepped_optimizers(file_model: FileModel, events: Tuple[GradEvent, ...]) -> set:
    return {file_model.stepped_optimizer(e.call) for e in events if e.kind == "step"}


# -- parameters() generators ----------------------------------------------------

def parameters_generator_binding(file_model: FileModel, call: CallSite) -> Optional[Assignment]:
    """The assignment ``params = model.parameters()`` (a generator) that the stored name a clip
    is given last got before the clip, in the clip's scope; None otherwise."""
    arg = clipped_parameters(call)
    path = dotted(arg) if arg is not None else None
    if path is None or file_model.derived(_defines_parameters):
        return None
    bindings = [a for a in call.scope.assignments if a.order < call.order and path in map(dotted, a.targets)]
    if not bindings or not _is_parameters_generator(file_model, bindings[-1]):
        return None
    return bindings[-1]


def spent_generator(file_model: FileModel, call: CallSite) -> Optional[str]:
    """For a clip whose parameters are a stored ``model.parameters()`` generator that an
    earlier use already ran to the end (an optimizer built from it, a loop over it, an
    earlier clip, or this clip on an earlier iteration), what used it up; else None."""
    binding = parameters_generator_binding(file_model, call)
    if binding is None:
        return None
    path = dotted(clipped_parameters(call))
    scope = call.scope
    for other in scope.calls:
        if binding.order < other.order < call.order and _consumes(file_model, other, path):
            if not exclusive(file_model, other, call):
                return f"`{other.callee}(...)`" if other.callee else "an earlier call"
    for a in scope.assignments:
        if a.kind == "for" and binding.order < a.order < call.order and dotted(a.value) == path:
            return "a for loop over it"
    loop = call.site.loop
    if loop is not None and not loop.contains(binding.order):
        if any(loop.contains(a.order) and path in map(dotted, a.targets) for a in scope.assignments):
            return None  # bound afresh later in the iteration, for the next one
        return "this same clip on the loop's first iteration"
    return None


def _defines_parameters(file_model: FileModel) -> bool:
    """A class of this file with its own ``parameters()`` may return a list."""
    return "parameters" in file_model.functions or any(name == "parameters" for _, name in file_model.methods)


def _is_parameters_generator(file_model: FileModel, binding: Assignment) -> bool:
    """``params = model.parameters()``, or a one-shot iterator over one:
    ``itertools.chain(enc.parameters(), dec.parameters())``, ``filter(f, model.parameters())``,
    ``(p for p in model.parameters() if p.requires_grad)``."""
    if binding.kind != "assign" or len(binding.targets) != 1 or binding.value is None:
        return False
    return _parameters_iterator(file_model, binding.value)


def _parameters_iterator(file_model: FileModel, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.GeneratorExp):
        return _parameters_iterator(file_model, value.for_in.iter) or _parameters_call(file_model, value.for_in.iter)
    if not isinstance(value, cst.Call):
        return False
    if _parameters_call(file_model, value):
        return True
    callee = dotted(value.func)
    if callee is None or callee in file_model.bound_here:
        return False
    qualified = file_model.names.qualify_any(callee)
    if qualified in _ONE_SHOT_ITERTOOLS or (qualified is None and callee in _ONE_SHOT_BUILTINS):
        return any(_parameters_call(file_model, a.value) or _parameters_iterator(file_model, a.value)
                   for a in value.args if not a.keyword)
    return False


def _parameters_call(file_model: FileModel, value: cst.BaseExpression) -> bool:
    """``model.parameters()`` of a module (not of a function of this file, nor torch's own)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "parameters"):
        return False
    call = file_model.call_of(value)
    return call is not None and file_model.resolve(call) is None and file_model.qualify(call) is None


def _consumes(file_model: FileModel, call: CallSite, path: Optional[str]) -> bool:
    """Does ``call`` run the generator at ``path`` to its end?"""
    takes = [a for a in call.node.args if _iterates(a.value, path) or (a.star == "*" and dotted(a.value) == path)]
    if not takes:
        return False
    if any(not isinstance(a.value, cst.Name) and not isinstance(a.value, cst.Attribute) for a in takes):
        return True  # a comprehension over it
    callee = call.callee or ""
    return (callee in _CONSUMERS or clip_kind(file_model, call) is not None
            or file_model.builds_optimizer(callee) or any(a.star for a in takes))


def _iterates(node: cst.BaseExpression, path: Optional[str]) -> bool:
    if dotted(node) == path:
        return True
    if isinstance(node, COMPREHENSIONS):
        return dotted(node.for_in.iter) == path
    return False


# -- generators walked twice by a helper ---------------------------------------------
def rewalking_helper(file_model: FileModel, call: CallSite) -> Optional[str]:
    """For a call that hands a one-shot iterator over parameters (``model.parameters()``, or a
    name bound to one, a stored ``chain`` of them) to a function of this file or of another
    module of the project that walks that parameter to the end and then again to change its
    gradients (a hand-written clip: the norm first, then ``p.grad.mul_(coef)``): the
    function's name, as called. The second walk sees an empty iterator and clips nothing."""
    args = call.node.args
    if not args or any(a.star for a in args) or call.callee is None:
        return None
    given = [a for a in args if _one_shot_parameters(file_model, call, a.value)]
    if not given:
        return None  # most calls: nothing here is a parameters generator
    target = file_model.resolve(call)
    if target is not None:
        walked = file_model.derived(rewalked, target)
        names = positional_and_keyword_params(target)[0]
        if target.class_name is not None and call.callee.startswith(("self.", "cls.")):
            names = names[1:]
    else:
        callee = project_callee(file_model, call)
        if callee is None or not callee.summary.may_rewalk:
            return None  # the cheap summary of its module: no loop of it changes gradients
        walked = callee.ask(rewalked) or frozenset()
        names = callee.ask(positional_params) or ()
    if not walked:
        return None
    for arg in given:
        param = arg.keyword.value if arg.keyword is not None else _positional_name(args, arg, names)
        if param in walked:
            return call.callee
    return None


def _positional_name(args: Sequence[cst.Arg], arg: cst.Arg, names: Tuple[str, ...]) -> Optional[str]:
    index = [a for a in args if a.keyword is None].index(arg)
    return names[index] if index < len(names) else None


def _one_shot_parameters(file_model: FileModel, call: CallSite, value: cst.BaseExpression) -> bool:
    """``model.parameters()``, ``chain(a.parameters(), b.parameters())``, or a name whose last
    binding before ``call`` is one (and no class of this file defines its own ``parameters``)."""
    if file_model.derived(_defines_parameters):
        return False
    if _parameters_iterator(file_model, value):
        return True
    if not isinstance(value, cst.Name):
        return False
    bindings = [a for a in call.scope.assignments if a.order < call.order and value.value in map(dotted, a.targets)]
    return bool(bindings) and _is_parameters_generator(file_model, bindings[-1])
