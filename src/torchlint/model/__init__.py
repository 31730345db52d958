"""The per-file model: the facts every rule shares, built once per file.

Rules ask it questions (what grad mode holds at this call? is this a
forward pass? which loop is a training loop? does this value carry a
graph?) instead of walking the tree themselves.
"""
from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Hashable, Iterable, List, Optional, Set, Tuple, TypeVar, Union, cast,
)

import libcst as cst

from torchlint.model import vocab
from torchlint.model.builder import ModelBuilder
from torchlint.model.walk import walk
from torchlint.model.expr import dotted, keyword, positional
from torchlint.model.expr import bound_paths, identifiers, read_paths, referenced_paths
from torchlint.model.records import Assignment, CallSite, Loop, LoopRole, Scope, Site, Span
from torchlint.model.grad import GradMode, classify
from torchlint.model.names import TorchNames, forwarded_callee
from torchlint.model.roles import Roles
from torchlint.model.project import ProjectView, view_for
from torchlint.model.unit_tests import is_unit_test_file
from torchlint.torch_version import NEWEST_KNOWN, TorchVersion

if TYPE_CHECKING:
    from torchlint.model.taint import Taint

# scope_grad's mark for a scope whose mode is being computed (a call cycle).
_CYCLE = object()
_NO_PLACEHOLDER = object()
_UNSET = object()
T = TypeVar("T")


F = TypeVar("F", bound=Callable[..., Any])


def memoized(method: F) -> F:
    """A FileModel method whose answer is kept in the model's memo, per arguments."""

    @functools.wraps(method)
    def cached(self: FileModel, *args: Hashable) -> Any:
        return self.derived(method, *args)

    return cast(F, cached)  # same signature: ``cached`` passes its arguments through


if TYPE_CHECKING:
    memoized_property = property  # what mypy sees: a property of the method's type
else:
    def memoized_property(method):
        return property(memoized(method))

__all__ = ["FileModel", "differentiated", "flow_back", "GradMode", "CallSite", "Loop", "Scope", "Site", "Span",
           "Assignment", "LoopRole"]

_CLEAR_WORDS = ("zero_grad", "clear_grad", "cleargrads", "reset_grad", "zero_gradients")
# Methods of models that are not forward passes (or run under no_grad themselves).
_NOT_FORWARD = frozenset(
    "parameters named_parameters buffers named_buffers children named_children modules "
    "named_modules state_dict load_state_dict eval train to cuda cpu half float double "
    "bfloat16 zero_grad apply requires_grad_ generate predict predict_proba sample "
    "save save_pretrained from_pretrained freeze unfreeze backward step item detach "
    "numel size summary compile add_module extra_repr type share_memory".split()
)
_NOT_FORWARD_PREFIXES = ("get_", "set_", "init", "reset", "save", "load", "num_", "register",
                         "generate", "predict", "sample", "_")
_MODULE_BASE_HINTS = ("Module", "Model", "Net", "Lightning", "Layer", "Block")


def differentiated(call: CallSite) -> Optional[cst.BaseExpression]:
    """The tensor a backward call differentiates: ``loss`` of ``loss.backward()``,
    ``outputs`` of ``autograd.grad(outputs, inputs)``, ``loss`` of ``self.manual_backward(loss)``."""
    if call.method == "backward" and isinstance(call.node.func, cst.Attribute):
        return call.node.func.value
    return positional(call.node, 0) or keyword(call.node, "outputs") or keyword(call.node, "tensors")


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _in_comprehension(call: CallSite) -> bool:
    """Is the call inside a comprehension of its statement (``[model(x) for x in xs]``)?"""
    depth, found = [0], [False]

    def enter(node: cst.CSTNode) -> None:
        if isinstance(node, _COMPREHENSIONS):
            depth[0] += 1
        elif node is call.node and depth[0]:
            found[0] = True

    def leave(node: cst.CSTNode) -> None:
        if isinstance(node, _COMPREHENSIONS):
            depth[0] -= 1

    walk(call.site.stmt, enter, leave)
    return found[0]


def flow_back(paths: set, scope: Scope) -> set:
    """Close ``paths`` over the scope's assignments and container stores, backwards.

    ``loss = sum(parts); loss.backward()`` starting from {loss} adds ``parts``;
    ``loss = sum(d.values())`` adds ``d``.
    """
    flows = [(a.targets, a.value) for a in scope.assignments if a.value is not None]
    flows += [((c.node.func.value,), c.node) for c in scope.calls  # a receiver: ``func`` is an Attribute
              if c.method in vocab.STORE_METHODS and c.receiver and isinstance(c.node.func, cst.Attribute)]
    # Each flow as (the paths its targets name, its value), read once. A flow that has
    # fired has given all it reads: it is dropped, and the loop ends when none fires.
    waiting = [({p for t in targets for p in referenced_paths(t)}, value) for targets, value in flows]
    fired = True
    while fired:
        fired = False
        still = []
        for bound, value in waiting:
            if bound.isdisjoint(paths):
                still.append((bound, value))
                continue
            paths.update(read_paths(value))
            fired = True
        waiting = still
    return paths


class FileModel:
    def __init__(self, module: cst.Module, path: str = "", target_torch: Optional[TorchVersion] = None) -> None:
        self.module = module
        self.path = path
        # The oldest torch the project supports; version-dependent advice follows it.
        self.target_torch_version: TorchVersion = target_torch or NEWEST_KNOWN
        self.names = TorchNames()
        self.module_scope = Scope(module, "<module>", None)
        self.scopes: List[Scope] = [self.module_scope]
        self.functions: Dict[str, List[Scope]] = defaultdict(list)  # not methods
        self.methods: Dict[Tuple[str, str], Scope] = {}  # (class, name) -> Scope
        self.class_bases: Dict[str, Tuple[str, ...]] = {}
        self.calls: List[CallSite] = []
        self.assignments: List[Assignment] = []
        self.subscripts: List[cst.Subscript] = []  # every ``x[...]``, in source order
        self._scope_by_node: dict = {}
        builder = ModelBuilder(self)
        walk(module, builder.on_visit, builder.on_leave)
        self.module_scope.end = builder.order + 1
        self.parents: Dict[int, cst.CSTNode] = builder.parents  # id(node) -> the node it sits in
        self.dead_suites: FrozenSet[int] = frozenset(builder.dead_suites)  # ids; see dead_code.py
        self._call_orders = [c.order for c in self.calls]
        self._assign_orders = [a.order for a in self.assignments]
        self._call_by_node = {id(c.node): c for c in self.calls}
        self._memo: dict = {}
        self._project = _UNSET

    def is_dead(self, node: cst.CSTNode) -> bool:
        """Does ``node`` sit in a branch that never runs (``dead_code.py``)? The model holds
        no facts from there; the engine drops findings and fixes that point there."""
        if not self.dead_suites:
            return False
        key: Optional[int] = id(node)
        while key is not None:
            if key in self.dead_suites:
                return True
            parent = self.parents.get(key)
            key = id(parent) if parent is not None else None
        return False

    def derived(self, analysis: Callable[..., T], *args: Hashable,
                while_computing: Union[bool, object, FrozenSet] = _NO_PLACEHOLDER) -> T:
        """``analysis(self, *args)``, computed once per model.

        The one memo for every derived analysis: the model's own (``@memoized``)
        and those other modules define over it (``moves_to_cuda``, a fix's parent
        map), which call ``model.derived(their_function)`` instead of storing
        attributes on the model. ``while_computing`` is what a recursive request
        for the same value gets (a call cycle) until the first one returns.
        """
        key = (analysis, args)
        memo = self._memo
        if key in memo:
            return memo[key]
        if while_computing is not _NO_PLACEHOLDER:
            memo[key] = while_computing
        value = memo[key] = analysis(self, *args)
        return value

    def scope_of_node(self, node: cst.CSTNode) -> Optional[Scope]:
        """The scope the ``def`` ``node`` opens (None for other nodes)."""
        return self._scope_by_node.get(id(node))

    def add_scope(self, scope: Scope) -> None:
        self.scopes.append(scope)
        self._scope_by_node[id(scope.node)] = scope
        if scope.class_name is not None:
            self.methods[(scope.class_name, scope.name)] = scope
        else:
            self.functions[scope.name].append(scope)

    # -- lookup --------------------------------------------------------
    def call_of(self, node: cst.Call) -> Optional[CallSite]:
        return self._call_by_node.get(id(node))

    def calls_between(self, start: int, end: int) -> list:
        lo = bisect.bisect_left(self._call_orders, start)
        hi = bisect.bisect_left(self._call_orders, end)
        return self.calls[lo:hi]

    def calls_in(self, span: Union[Scope, Span, Loop]) -> list:
        return self.calls_between(span.start, span.end)

    def enclosing_class(self, scope: Scope) -> Optional[str]:
        current: Optional[Scope] = scope
        while current is not None:
            if current.class_name is not None:
                return current.class_name
            current = current.parent
        return None

    def resolve(self, call: CallSite) -> Optional[Scope]:
        """The function or method of this module a call runs, if we can tell."""
        callee = call.callee
        if callee is None:
            return None
        head, _, rest = callee.partition(".")
        if not rest:
            return self._function_named(head, call.scope)
        if head in ("self", "cls") and "." not in rest:
            cls = self.enclosing_class(call.scope)
            return self.methods.get((cls, rest)) if cls else None
        return None

    def _function_named(self, name: str, where: Scope) -> Optional[Scope]:
        """The function ``name`` means in ``where``: the nearest enclosing scope's own."""
        candidates = self.functions.get(name)
        if not candidates:
            return None
        scope: Optional[Scope] = where
        while scope is not None:
            for cand in candidates:
                if cand.parent is scope:
                    return cand
            scope = scope.parent
        return None

    @memoized_property
    def wrapped_calls(self) -> dict:
        """{function: [grad mode, ...]} for calls made through a grad-mode wrapper:
        ``torch.no_grad()(evaluate)(model, loader)`` runs ``evaluate`` without grad."""
        out = defaultdict(list)
        for call in self.calls:
            wrapper = call.node.func
            if not isinstance(wrapper, cst.Call) or len(wrapper.args) != 1 or not isinstance(wrapper.func, cst.Call):
                continue
            mode = classify(wrapper.func)
            name = dotted(wrapper.args[0].value)
            target = self._function_named(name, call.scope) if mode is not None and name is not None else None
            if target is not None:
                out[target].append(mode)
        return out

    def instance_methods(self, call: CallSite) -> Tuple[Scope, ...]:
        """The methods of classes of this module that ``agent.act(s)`` may run, when every
        binding of ``agent`` builds one of them (each class's own method, or one it inherits
        from the file); empty when a binding is something else or a class lacks the method."""
        receiver, method = call.receiver, call.method
        if receiver is None or method is None or receiver in ("self", "cls"):
            return ()
        found = []
        for cls in sorted(self.roles.instance_classes(receiver)):
            scope = self._own_or_inherited(cls, method)
            if scope is None:
                return ()
            found.append(scope)
        return tuple(found)

    def _own_or_inherited(self, cls: str, method: str) -> Optional[Scope]:
        seen = set()
        current: Optional[str] = cls
        while current is not None and current not in seen:
            seen.add(current)
            found = self.methods.get((current, method))
            if found is not None:
                return found
            current = next((b for b in self.class_bases.get(current, ()) if b in self.class_bases), None)
        return None

    @memoized_property
    def callers(self) -> dict:
        out = defaultdict(list)
        for call in self.calls:
            target = self.resolve(call)
            if target is not None:
                out[target].append(call)
        return out

    def part_of_forward(self, scope: Scope) -> bool:
        """``forward``/``_forward``/``__call__``, or a function one of them calls (here, at
        any depth): its results may be backpropagated by whoever ran the forward."""
        seen, todo = set(), [scope]
        while todo:
            current = todo.pop()
            if current.name in vocab.FORWARD_METHODS and not current.is_module:
                return True
            if current in seen:
                continue
            seen.add(current)
            todo.extend(call.scope for call in self.callers.get(current, ()))
            if current.class_name is not None:
                # self.helper() in a base or sibling class reaches it through inheritance.
                todo.extend(c.scope for c in self._calls_by_callee.get(f"self.{current.name}", ()))
        return False

    @memoized_property
    def _calls_by_method(self) -> dict:
        out = defaultdict(list)
        for call in self.calls:
            if call.method:
                out[call.method].append(call)
        return out

    @memoized_property
    def _calls_by_callee(self) -> dict:
        out = defaultdict(list)
        for call in self.calls:
            out[call.callee].append(call)
        return out

    @property
    def project(self) -> Optional[ProjectView]:
        """The project the file belongs to, for names imported from its other modules;
        found when first asked (most files never ask)."""
        if self._project is _UNSET:
            self._project = view_for(self.path)
        return cast("Optional[ProjectView]", self._project)  # no longer _UNSET

    def consulted_files(self) -> dict:
        """The project files read for this file's analysis: path -> (mtime_ns, size)."""
        return dict(self._project.consulted) if isinstance(self._project, ProjectView) else {}

    @memoized_property
    def roles(self) -> Roles:
        """Models and criteria known from how they were built (``model/roles.py``)."""
        return Roles(self)

    @memoized_property
    def wrapper_instances(self) -> frozenset:
        """Names bound to library wrappers that run their own inference (``YOLO(path)``,
        ``pipeline(...)``): calling one is not a raw forward pass."""
        found: Set[str] = set()
        for a in self.assignments:
            if a.kind == "assign" and isinstance(a.value, cst.Call):
                if vocab.last_name(dotted(a.value.func) or "") in vocab.INFERENCE_WRAPPERS:
                    found.update(p for p in map(dotted, a.targets) if p)
        return frozenset(found)

    def reachable_ranges(self, span: Union[Scope, Span, Loop]) -> list:
        """``span`` (a Loop or Scope) plus the same-module helpers it calls, as order ranges."""
        ranges, seen, todo = [], set(), [(span.start, span.end)]
        while todo:
            start, end = todo.pop()
            ranges.append((start, end))
            for call in self.calls_between(start, end):
                target = self.resolve(call)
                if target is not None and target not in seen and not start <= target.start < end:
                    seen.add(target)
                    todo.append((target.start, target.end))
        return ranges

    def reachable_calls(self, span: Union[Scope, Span, Loop]) -> list:
        return [c for start, end in self.reachable_ranges(span) for c in self.calls_between(start, end)]

    def reachable_assignments(self, span: Union[Scope, Span, Loop]) -> list:
        out = []
        for start, end in self.reachable_ranges(span):
            lo = bisect.bisect_left(self._assign_orders, start)
            hi = bisect.bisect_left(self._assign_orders, end)
            out.extend(self.assignments[lo:hi])
        return out

    def loops(self) -> Iterable[Loop]:
        for scope in self.scopes:
            yield from scope.loops

    @memoized
    def loop_role(self, loop: Loop) -> LoopRole:
        calls = self.reachable_calls(loop)
        return LoopRole(
            calls=calls,
            backward=any(self.is_backward(c) for c in calls),
            steps=[c for c in calls if self.stepped_optimizer(c)],
            clears=any(self.clears_grad(c) for c in calls) or any(
                self.clears_grad_by_assignment(a) for a in self.reachable_assignments(loop)
            ),
            data=loop.iter is not None and any(vocab.is_loader_name(n) for n in identifiers(loop.iter)),
        )

    def repeats(self, call: CallSite) -> bool:
        """Does the call run more than once: in a loop or a comprehension, or in a function
        that a same-module caller reaches from one? (Callers elsewhere are not known.)"""
        here = call.site.loop is not None or _in_comprehension(call)
        return self.derived(FileModel._repeats, call.scope, here, while_computing=False)

    def _repeats(self, scope: Scope, here: bool) -> bool:
        if here:
            return True
        callers = list(self.callers.get(scope, ()))
        if scope.class_name is not None:  # ``agent.choose_action(s)``: a method, by its name
            callers += [c for c in self._calls_by_method.get(scope.name, ()) if c.receiver is not None]
        # A recursive call asking about its own scope hears "no" until the answer is known.
        return any(self.derived(FileModel._repeats, c.scope, c.site.loop is not None or _in_comprehension(c),
                                while_computing=False) for c in callers)

    def loop_children(self, loop: Loop) -> list:
        return [other for other in loop.scope.loops if other.parent is loop]

    # -- grad mode -----------------------------------------------------
    def grad_at(self, site: Site) -> GradMode:
        if site.grad is not None:
            return site.grad
        for order, mode in reversed(site.scope.grad_switches):
            if order < site.order:
                return mode
        return self.scope_grad(site.scope)

    def scope_grad(self, scope: Scope) -> GradMode:
        # In a call cycle, a call from inside the cycle adds nothing.
        return self.derived(FileModel._compute_scope_grad, scope, while_computing=_CYCLE)

    def _compute_scope_grad(self, scope: Scope) -> GradMode:
        if scope.is_module:
            return GradMode.GRAD
        if scope.decorator_grad is not None:
            return scope.decorator_grad
        if scope.class_name is not None and scope.name in vocab.GRAD_FREE_HOOKS:
            if self._framework_class(scope.class_name):
                return GradMode.NO_GRAD
        callers = self.callers.get(scope, [])
        wrapped = self.wrapped_calls.get(scope, [])
        if callers or wrapped:
            modes = ({self.grad_at(c.site) for c in callers} | set(wrapped)) - {_CYCLE}
            if not modes:  # only called from itself (or its own callees): callers say nothing
                pass
            elif modes == {GradMode.NO_GRAD}:
                return GradMode.NO_GRAD
            elif GradMode.GRAD not in modes:
                return GradMode.MAYBE
            else:
                return GradMode.GRAD
        if scope.def_grad is not None:
            return scope.def_grad
        if scope.parent is not None and not scope.parent.is_module:
            return self.scope_grad(scope.parent)
        return GradMode.GRAD

    # -- what calls do -------------------------------------------------
    def qualify(self, call: CallSite) -> Optional[str]:
        return self.names.qualify(call.callee)

    def qualify_forwarded(self, call: CallSite) -> Optional[str]:
        """``qualify``, also through a module-level name bound only to a lambda that hands
        every argument on (``Variable = lambda *a, **k: autograd.Variable(*a, **k)``): what the
        call's keywords reach. Its result may be moved to a device, so this is no answer to
        what the call returns."""
        qualified = self.qualify(call)
        if qualified is None and call.callee is not None and "." not in call.callee:
            qualified = self.names.qualify(self._forwarding_lambdas.get(call.callee))
        return qualified

    @memoized_property
    def _forwarding_lambdas(self) -> dict:
        """{name: the dotted callee} for module-level names bound once, to a forwarding lambda."""
        found: Dict[str, Optional[str]] = {}
        for a in self.module_scope.assignments:
            for target in a.targets:
                for path in bound_paths(target):
                    callee = forwarded_callee(a.value) if a.kind == "assign" and len(a.targets) == 1 else None
                    found[path] = callee if path not in found else None
        return {name: callee for name, callee in found.items() if callee is not None}

    def is_backward(self, call: CallSite) -> bool:
        if call.method in ("backward", "manual_backward"):
            return True
        return self.qualify(call) == "torch.autograd.backward"

    def is_autograd_grad(self, call: CallSite) -> bool:
        q = self.qualify(call)
        return q in ("torch.autograd.grad", "torch.autograd.functional.vjp") or (
            call.callee is not None and call.callee.endswith("autograd.grad")
        )

    def is_gradient_call(self, call: CallSite) -> bool:
        """``autograd.grad`` and the ``torch.autograd.functional`` helpers (jacobian, hessian,
        vjp, ...): they return gradients, which carry a graph only with ``create_graph=True``."""
        return self.is_autograd_grad(call) or (self.qualify(call) or "").startswith("torch.autograd.functional.")

    def computes_gradients(self, call: CallSite) -> bool:
        return self.is_backward(call) or self.is_autograd_grad(call) or call.method in (
            "requires_grad_", "enable_grad", "retain_grad", "register_hook"
        )

    @memoized_property
    def optimizer_names(self) -> frozenset:
        """Dotted names assigned an optimizer instance anywhere in the file."""
        found: Set[str] = set()
        for scope in self.scopes:
            for a in scope.assignments:
                if a.kind != "assign" or not isinstance(a.value, cst.Call):
                    continue
                if self.builds_optimizer(dotted(a.value.func)):
                    found.update(p for p in map(dotted, a.targets) if p)
        return frozenset(found)

    def builds_optimizer(self, callee: Optional[str]) -> bool:
        """Does calling ``callee`` build an optimizer (torch.optim's, or a known library's)?"""
        if callee is None:
            return False
        qualified = self.names.qualify(callee) or ""
        last = vocab.last_name(callee)
        return ((qualified.startswith("torch.optim.") and "lr_scheduler" not in qualified)
                or last in vocab.OPTIMIZER_CLASSES or last.endswith("Optimizer"))

    def is_optimizer(self, path: Optional[str]) -> bool:
        if path is None:
            return False
        return path in self.optimizer_names or vocab.is_optimizer_name(vocab.last_name(path))

    def stepped_optimizer(self, call: CallSite) -> Optional[str]:
        """The optimizer an ``opt.step()`` or ``scaler.step(opt)`` call steps."""
        if call.method != "step" or call.receiver is None:
            return None
        if self.is_optimizer(call.receiver):
            return call.receiver
        if "scaler" in call.receiver.lower():
            target = positional(call.node, 0)
            return dotted(target) if target is not None else None
        return None

    @staticmethod
    def is_closure_step(call: CallSite) -> bool:
        """``optimizer.step(closure)``: the closure runs zero_grad and backward itself."""
        return bool(call.node.args) and "scaler" not in (call.receiver or "").lower()

    def clears_grad(self, call: CallSite) -> bool:
        method = call.method or ""
        if any(word in method.lower() for word in _CLEAR_WORDS):
            return True
        recv = call.receiver or ""
        return method.endswith("_") and (recv.endswith(".grad") or recv.endswith(".grad.data"))

    @staticmethod
    def clears_grad_by_assignment(a: Assignment) -> bool:
        """``p.grad = None`` or ``del p.grad``."""
        return a.kind in ("assign", "del") and any(
            isinstance(t, cst.Attribute) and t.attr.value == "grad" for t in a.targets
        )

    @memoized
    def _framework_class(self, cls: str) -> bool:
        """Might a framework (Lightning, mmengine, a Trainer) call this class's hooks under
        no_grad? Not when the bases it reaches are torch's own: a plain ``nn.Module`` with a
        ``predict_step`` is called by the file's own code, in whatever grad mode it chooses."""
        seen, todo, torch_base = set(), [cls], False
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for base in self.class_bases.get(current, ()):
                if base in self.class_bases:
                    todo.append(base)
                elif not (self.names.qualify(base) or "").startswith("torch.nn."):
                    return True
                else:
                    torch_base = True
        return not torch_base  # a mixin with no base: its host class may be a framework's

    def is_module_class(self, cls: Optional[str]) -> bool:
        bases = self.class_bases.get(cls or "", ())
        return any(hint in b for b in bases for hint in _MODULE_BASE_HINTS)

    def forward_target(self, call: CallSite) -> Optional[str]:
        """For a forward pass, the model it runs (``model`` for ``model.module.forward(x)``)."""
        callee = call.callee
        if callee is None:
            return None
        while callee.endswith((".forward", ".module")):
            callee = callee.rsplit(".", 1)[0]
        if callee == "self":
            return "self" if self.is_module_class(self.enclosing_class(call.scope)) else None
        last = vocab.last_name(callee)
        if not last or self.names.qualify(callee) is not None:
            return None  # a torch API function
        if last[0].isupper() and (callee in self.class_bases or not self.roles.bound_variable(callee)):
            return None  # a class being built; ``G_AB = Generator()`` is a variable, though
        if "." in callee and callee.split(".", 1)[0] in self.names.bound_by_import:
            return None  # models.resnet18(weights=...): a function of an imported module
        if callee in self.wrapper_instances:
            return None
        return callee

    def is_forward(self, call: CallSite, models: Iterable[str] = ()) -> bool:
        target = self.forward_target(call)
        if target is None or (target != "self" and self.resolve(call) is not None):
            return False  # knn_classifier(...) defined in this file is a function, not a model
        if target == "self" or target in models or target in self.roles.models:
            return True
        return vocab.is_model_name(vocab.last_name(target))

    def is_submodule_forward(self, call: CallSite) -> bool:
        """``model.trunk(x)``, ``self.encoder.features(x)``: a part of a model run forward.

        Only taint uses this; TL101 keeps to direct model calls, since methods
        like ``generate`` run under no_grad themselves.
        """
        method, receiver = call.method, call.receiver
        if not method or receiver is None or method[0].isupper() or method in _NOT_FORWARD:
            return False
        if method.startswith(_NOT_FORWARD_PREFIXES) or self.names.qualify(receiver) is not None:
            return False
        holder = receiver
        while holder.endswith(".module"):
            holder = holder.rsplit(".", 1)[0]
        if holder == "self":
            return self.is_module_class(self.enclosing_class(call.scope))
        return holder in self.roles.models or vocab.is_model_name(vocab.last_name(holder))

    def is_loss_call(self, call: CallSite) -> bool:
        callee = call.callee
        if callee is None:
            return False
        last = vocab.last_name(callee)
        if last[:1].isupper():
            return False
        q = self.names.qualify(callee)
        if q is not None:
            return q.startswith("torch.nn.functional.") and last in vocab.LOSS_FUNCTIONS
        roles = self.roles
        return callee in roles.criteria or vocab.is_loss_name(last) or roles.is_project_loss_function(callee)

    @memoized_property
    def is_test_file(self) -> bool:
        """Unit tests run a forward pass to compare outputs and trigger errors on purpose.

        Told by content (a test framework imported, test functions that assert and
        that nothing here calls), not by name: ``test_net.py`` is often an
        evaluation program (``model/unit_tests.py``).
        """
        return is_unit_test_file(self)

    def is_test_function(self, scope: Scope) -> bool:
        """``test_*`` methods of ``*TestCase`` / ``Test*`` classes, wherever the file lives."""
        cls = self.enclosing_class(scope) or ""
        return scope.name.startswith("test") and "test" in cls.lower()

    @memoized
    def returned_paths(self, scope: Scope) -> frozenset:
        """Names whose value (or something built from it) the scope returns."""
        paths: Set[str] = set()
        for _, value in scope.returns:
            paths.update(referenced_paths(value))
        return frozenset(flow_back(paths, scope))

    def flows_to_return(self, call: CallSite) -> bool:
        stmt = call.site.stmt
        if isinstance(stmt, cst.Return):
            return True
        if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
            returned = self.returned_paths(call.scope)
            return any(p in returned for t in targets for p in bound_paths(t))
        return False

    @memoized_property
    def bound_here(self) -> frozenset:
        """Every name the file binds itself, in any scope: a function, a class, a method, a
        parameter, an assignment's, a loop's or a ``with``'s target (an import is not one).
        A builtin (``filter``) or a star import's name called here is what it says only
        where none of these rebinds it."""
        found = set(self.functions) | set(self.class_bases) | {name for _, name in self.methods}
        for scope in self.scopes:
            found.update(scope.params)
        for a in self.assignments:
            for target in a.targets:
                found.update(p.split(".", 1)[0] for p in bound_paths(target))
        return frozenset(found)

    @property
    def is_torch_code(self) -> bool:
        return not self.names.foreign_framework

    # -- taint ---------------------------------------------------------
    @memoized
    def taint(self, scope: Scope) -> Taint:
        from torchlint.model.taint import Taint

        return Taint(self, scope)

    @memoized
    def returns_plain(self, scope: Scope) -> bool:
        """Does the function return only Python values (``loss.item()``, ``float(x)``, numbers)?"""
        from torchlint.model.taint import returns_plain

        return returns_plain(self, scope)

    def returns_graph(self, scope: Scope) -> Union[bool, Tuple[bool, ...]]:
        """Does the function return a graph-carrying value? A tuple of answers for tuples."""
        # A recursive function asking about itself hears "no" until the answer is known.
        return self.derived(FileModel._returns_graph, scope, while_computing=False)

    def _returns_graph(self, scope: Scope) -> Union[bool, Tuple[bool, ...]]:
        taint = self.taint(scope)
        shapes = [taint.element_taint(value, taint.names_at(site.order)) for site, value in scope.returns]
        tuples = [s for s in shapes if isinstance(s, tuple)]
        if shapes and len(tuples) == len(shapes) and len({len(t) for t in tuples}) == 1:
            return tuple(any(col) for col in zip(*tuples))
        return any(any(s) if isinstance(s, tuple) else s for s in shapes)
