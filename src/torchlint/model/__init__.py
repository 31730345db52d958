"""The per-file model: the facts every rule shares, built once per file.

Rules ask it questions (what grad mode holds at this call? is this a
forward pass? which loop is a training loop? does this value carry a
graph?) instead of walking the tree themselves.

``FileModel`` holds what one walk of the tree records (``builder.py``: scopes, calls,
assignments, loops, parents) and the one memo (``derived``); the facts themselves are
defined in the small modules beside it, each a function taking the model first, and the
class names the most asked of them as its methods (a thin façade): which code a call runs
(``reach.py``), the grad mode at a statement (``grad_modes.py``), what a call does to
gradients and optimizers (``training_calls.py``), forward passes and losses
(``forwards.py``). A function of another module of the project is asked the same facts on
the model of its own module (``project.py``: ``ProjectFunction.ask``, ``ProjectView.class_fact``).
"""
from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Hashable, Iterable, List, Optional, Set, Tuple, TypeVar, Union, cast,
    overload,
)

import libcst as cst

from torchlint.model import forwards, grad_modes, reach, training_calls, vocab
from torchlint.model.builder import ModelBuilder
from torchlint.model.expr import bound_paths, read_paths, referenced_paths
from torchlint.model.records import Assignment, CallSite, Loop, LoopRole, Scope, Site, Span, Unsettled
from torchlint.model.grad import GradMode
from torchlint.model.names import TorchNames, forwarded_callee
from torchlint.model.roles import Roles
from torchlint.model.project import ProjectLookup, ProjectView
from torchlint.model.training_calls import differentiated
from torchlint.model.unit_tests import is_unit_test_file
from torchlint.torch_version import NEWEST_KNOWN, TorchVersion

if TYPE_CHECKING:
    from torchlint.model.taint import Taint

_NO_PLACEHOLDER = object()
_UNSET = object()
T = TypeVar("T")
P = TypeVar("P")  # what a cycle's inner request gets (``derived``'s ``while_computing``)


F = TypeVar("F", bound=Callable[..., Any])


def memoized(method: F) -> F:
    """A FileModel method whose answer is kept in the model's memo, per arguments."""

    @functools.wraps(method)
    def cached(self: FileModel, *args: Hashable) -> Any:
        # the memo read here: most asks find an answer, and a call less each is 1 % of a lint
        value = self._memo.get((method, args), _UNSET)
        return self.derived(method, *args) if value is _UNSET else value

    return cast(F, cached)  # same signature: ``cached`` passes its arguments through


if TYPE_CHECKING:
    memoized_property = property  # what mypy sees: a property of the method's type
else:
    def memoized_property(method):
        return property(memoized(method))

__all__ = ["FileModel", "differentiated", "flow_back", "GradMode", "CallSite", "Loop", "Scope", "Site", "Span",
           "Assignment", "LoopRole"]


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
    def __init__(self, module: cst.Module, path: str = "", target_torch: Optional[TorchVersion] = None,
                 project: Optional[ProjectLookup] = None) -> None:
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
        builder.record(module)
        self.module_scope.end = builder.order + 1
        self.parents: Dict[int, cst.CSTNode] = builder.parents  # id(node) -> the node it sits in
        self.dead_suites: FrozenSet[int] = frozenset(builder.dead_suites)  # ids; see dead_code.py
        self.suspends_somewhere: bool = builder.suspends  # a yield, an await, an async for/with
        self._call_orders = [c.order for c in self.calls]
        self._assign_orders = [a.order for a in self.assignments]
        self._call_by_node = {id(c.node): c for c in self.calls}
        self._memo: dict = {}
        self._project = project if project is not None else ProjectLookup(path)  # the gate's, in a lint

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

    @overload
    def derived(self, analysis: Callable[..., T], *args: Hashable) -> T: ...

    @overload
    def derived(self, analysis: Callable[..., T], *args: Hashable, while_computing: P) -> Union[T, P]: ...

    def derived(self, analysis: Callable[..., Any], *args: Hashable, while_computing: Any = _NO_PLACEHOLDER) -> Any:
        """``analysis(self, *args)``, computed once per model.

        The one memo for every derived analysis: the model's own (``@memoized``)
        and those other modules define over it (``moves_to_cuda``, a fix's parent
        map), which call ``model.derived(their_function)`` instead of storing
        attributes on the model. ``while_computing`` is what a recursive request
        for the same value gets (a call cycle) until the first one returns. An answer that is
        ``Unsettled`` (read off such a placeholder) is handed back but not kept.
        """
        key = (analysis, args)
        memo = self._memo
        value = memo.get(key, _UNSET)
        if value is not _UNSET:
            return value
        if while_computing is not _NO_PLACEHOLDER:
            memo[key] = while_computing
        value = memo[key] = analysis(self, *args)
        if isinstance(value, Unsettled):  # read off a cycle still being worked out: not an answer to keep
            del memo[key]
        return value

    def release(self) -> None:
        """Break the model's reference cycles once a lint is done with it: a call site, an
        assignment, a return and a loop point at their scope and the scope at them, and
        analyses in the memo hold the model. Broken, the model and its tree go by reference
        counting as the lint returns; left, the cyclic collector traced every node of the
        tree first (a tenth of the training corpus's lint, in process). The model answers
        nothing after."""
        self._memo.clear()
        for scope in self.scopes:
            scope.calls, scope.assignments, scope.returns, scope.loops = [], [], [], []

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

    def assignments_between(self, start: int, end: int) -> list:
        lo = bisect.bisect_left(self._assign_orders, start)
        hi = bisect.bisect_left(self._assign_orders, end)
        return self.assignments[lo:hi]

    def enclosing_class(self, scope: Scope) -> Optional[str]:
        current: Optional[Scope] = scope
        while current is not None:
            if current.class_name is not None:
                return current.class_name
            current = current.parent
        return None

    @property
    def project(self) -> Optional[ProjectView]:
        """The project the file belongs to, for names imported from its other modules;
        found when first asked (most files never ask)."""
        return self._project.view()

    def consulted_files(self) -> dict:
        """The project files read for this file's analysis: path -> (mtime_ns, size)."""
        return self._project.consulted_files()

    @memoized_property
    def roles(self) -> Roles:
        """Models and criteria known from how they were built (``model/roles.py``)."""
        return Roles(self)

    def loops(self) -> Iterable[Loop]:
        for scope in self.scopes:
            yield from scope.loops

    # -- the facts of the modules beside this one, asked of the model ----
    # Each is a function of its module taking the model first; here it is a method, and a
    # memoised one keeps its answer in the model's memo (``derived``).
    # Which code a call runs, who calls what, what repeats (``reach.py``).
    resolve = memoized(reach.resolve)  # asked 280,000 times over the corpus's median files
    instance_methods = reach.instance_methods
    callers = memoized_property(reach.callers)
    wrapped_calls = memoized_property(reach.wrapped_calls)
    part_of_forward = reach.part_of_forward
    reachable_ranges = reach.reachable_ranges
    reachable_calls = reach.reachable_calls
    reachable_assignments = reach.reachable_assignments
    loop_role = memoized(reach.loop_role)
    loop_children = reach.loop_children
    repeats = reach.repeats
    # The grad mode at a statement (``grad_modes.py``).
    grad_at = grad_modes.grad_at
    scope_grad = grad_modes.scope_grad
    # What a call does to gradients and optimizers (``training_calls.py``).
    is_backward = training_calls.is_backward
    is_autograd_grad = training_calls.is_autograd_grad
    is_differentiation = training_calls.is_differentiation
    backwards_in = memoized(training_calls.backwards_in)
    differentiations_in = memoized(training_calls.differentiations_in)
    is_gradient_call = training_calls.is_gradient_call
    computes_gradients = training_calls.computes_gradients
    optimizer_names = memoized_property(training_calls.optimizer_names)
    builds_optimizer = training_calls.builds_optimizer
    is_optimizer = training_calls.is_optimizer
    stepped_optimizer = training_calls.stepped_optimizer
    is_training_call = training_calls.is_training_call
    needs_autograd = training_calls.needs_autograd
    is_closure_step = staticmethod(training_calls.is_closure_step)
    clears_grad = training_calls.clears_grad
    clears_grad_by_assignment = staticmethod(training_calls.clears_grad_by_assignment)
    # Forward passes and losses (``forwards.py``).
    wrapper_instances = memoized_property(forwards.wrapper_instances)
    is_module_class = forwards.is_module_class
    forward_target = memoized(forwards.forward_target)  # asked of most calls by several rules
    is_forward = forwards.is_forward
    is_submodule_forward = forwards.is_submodule_forward
    is_loss_call = forwards.is_loss_call

    # -- what calls do -------------------------------------------------
    @memoized  # asked of the same calls by many rules and facts (``is_backward`` alone, 160,000
    def qualify(self, call: CallSite) -> Optional[str]:  # times over the corpus's median files)
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
        from torchlint.model.function_effects import returns_plain

        return returns_plain(self, scope)

    def returns_graph(self, scope: Scope) -> Union[bool, Tuple[bool, ...]]:
        """Does the function return a graph-carrying value? A tuple of answers for tuples."""
        # A recursive function asking about itself hears "no" until the answer is known.
        return self.derived(FileModel._returns_graph, scope, while_computing=False)

    def _returns_graph(self, scope: Scope) -> Union[bool, Tuple[bool, ...]]:
        if not scope.returns:
            return False  # no value handed back: no replay of the scope's assignments to ask
        taint = self.taint(scope)
        shapes = [taint.element_taint(value, taint.names_at(site.order)) for site, value in scope.returns]
        tuples = [s for s in shapes if isinstance(s, tuple)]
        if shapes and len(tuples) == len(shapes) and len({len(t) for t in tuples}) == 1:
            return tuple(any(col) for col in zip(*tuples))
        return any(any(s) if isinstance(s, tuple) else s for s in shapes)
