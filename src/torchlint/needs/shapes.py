"""The shapes a declaration is built from, and what several rules need."""
from __future__ import annotations

import ast
import builtins
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, ClassVar, FrozenSet, Iterable, List, Optional, Set, Tuple

from torchlint.model.ast_reading import assignment_targets, ast_dotted, bound_names
from torchlint.model.vocab import last_name
from torchlint.text_gate import BACKWARD_METHODS, GRADIENT_CODE, call_spelling, compile_gate, gate_matches, one_of
from torchlint.tree_gate import TreeIndex, activation_may_reach_loss, called_name, iterable_names, loop_statements
from torchlint.tree_gate import may_be_forward, names_in, train_mode_flags


_MAX_PICKS = 8  # regexes an alternative's text may become


class Need:
    """A condition on a file: ``text()`` is what its text must match, ``found_in`` asks the tree."""

    # What asking ``found_in`` costs, in rough units: a syntax shape scans the statements that
    # spell it (1); a question that follows values through scopes costs about what a rule's
    # check does (``FollowsValues``). The engine asks the cheapest questions first.
    cost: ClassVar[int] = 1

    def question_cost(self) -> int:
        return self.cost

    def text(self) -> Tuple[str, ...]:
        """Regexes every one of which matches the code of a file that holds this: () when
        the text cannot tell."""
        raise NotImplementedError

    def found_in(self, index: TreeIndex) -> bool:
        raise NotImplementedError

    def __and__(self, other: "Need") -> "Need":
        return AllOf(self, other)

    def __or__(self, other: "Need") -> "Need":
        return AnyOf(self, other)


class FollowsValues:
    """Mixed into a shape whose question follows values through a file's scopes (bindings,
    reads, calls), where a syntax shape only finds a spelling."""

    cost: ClassVar[int] = 10


class Unspelled(Need):
    """A shape the text cannot tell: the tree alone answers (a rule's ``Text`` marker, where it has
    one, says what a file must spell)."""

    def text(self) -> Tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class _Combined(Need):
    """Needs combined one way; a part combined the same way is spread into this one's parts."""

    needs: Tuple[Need, ...]

    def __init__(self, *needs: Need) -> None:
        flat = tuple(part for need in needs for part in (need.needs if type(need) is type(self) else (need,)))
        object.__setattr__(self, "needs", flat)

    def question_cost(self) -> int:
        return sum(need.question_cost() for need in self.needs)


@dataclass(frozen=True, init=False)
class AllOf(_Combined):
    """Every part holds (``a & b``)."""

    def text(self) -> Tuple[str, ...]:
        patterns = [p for need in self.needs for p in need.text()]
        return tuple(dict.fromkeys(patterns))

    def found_in(self, index: TreeIndex) -> bool:
        return all(need.found_in(index) for need in self.needs)


@dataclass(frozen=True, init=False)
class AnyOf(_Combined):
    """Some part holds (``a | b``)."""

    def text(self) -> Tuple[str, ...]:
        # A file holding one alternative matches each of its regexes, so for every way of
        # picking one regex per alternative, the file matches one of those picked: each
        # pick joined with ``|`` is a regex it matches. A pick implied by a narrower one is
        # left out; an alternative the text cannot tell leaves no condition at all.
        texts = [need.text() for need in self.needs]
        if not all(texts):
            return ()
        picks = [tuple(dict.fromkeys(pick)) for pick in itertools.product(*texts)]
        if len(picks) > _MAX_PICKS:  # too many to be worth asking: each alternative's first
            picks = [tuple(dict.fromkeys(text[0] for text in texts))]
        kept = [pick for pick in dict.fromkeys(picks)
                if not any(set(other) < set(pick) for other in picks)]
        return tuple("|".join(pick) for pick in kept)

    def found_in(self, index: TreeIndex) -> bool:
        return any(need.found_in(index) for need in self.needs)


@dataclass(frozen=True)
class Text(Need):
    pattern: str

    cost: ClassVar[int] = 0  # the text gate's memo holds the answer

    def text(self) -> Tuple[str, ...]:
        return (self.pattern,)

    def found_in(self, index: TreeIndex) -> bool:
        # The text gate's memo has the answer where the engine asked it already.
        return gate_matches(compile_gate((self.pattern,)), index.code_text())


@dataclass(frozen=True)
class Call(Need):
    """A call of one of ``names``: ``f(...)`` or ``x.f(...)`` (only the latter with ``method``).
    With ``aliases``, also under the names the file gives it (``from torch import compile as
    tc``, ``c = torch.compile``), and a bare ``f(...)`` of one of Python's builtins
    (``compile``) only where the file binds it; ``not_on``: modules whose ``x.f`` is another
    function (``re.compile``); ``discarded``: the call is a statement of its own, its value
    unused; ``passes=(keyword, value)``: the call passes that literal (``weights_only=False``,
    or ``0``, which Python takes for ``False``); ``omits``: it passes no such keyword (nor ``**``)."""

    names: Tuple[str, ...]
    method: bool = False
    aliases: bool = False
    not_on: FrozenSet[str] = frozenset()
    discarded: bool = False
    passes: Optional[Tuple[str, object]] = None
    omits: Optional[str] = None

    def __init__(self, *names: str, method: bool = False, aliases: bool = False, not_on: Iterable[str] = (),
                 discarded: bool = False, passes: Optional[Tuple[str, object]] = None,
                 omits: Optional[str] = None) -> None:
        for field, value in (("names", names), ("method", method), ("aliases", aliases),
                             ("not_on", frozenset(not_on)), ("discarded", discarded), ("passes", passes),
                             ("omits", omits)):
            object.__setattr__(self, field, value)

    def text(self) -> Tuple[str, ...]:
        # an alias is called by another name, but named where it is bound
        called = r"\b" + one_of(self.names) + r"\b" if self.aliases else call_spelling(self.names, self.method)
        return (called,) + ((r"\b" + re.escape(self.passes[0]) + r"\b",) if self.passes else ())

    def found_in(self, index: TreeIndex) -> bool:
        return bool(self.calls(index))

    def calls(self, index: TreeIndex) -> List[ast.Call]:
        """The calls of ``index``'s tree that may be this one."""
        # The calls of the names are found once per tree, whatever keywords each asks of them.
        named, nodes = index.derived(_CallsNamed(self.names, self.method, self.aliases, self.not_on))
        found = [call for call in named if self._keywords_fit(call)]
        if self.discarded:
            calls = {id(call) for call in found}
            found = [n.value for n in nodes if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                     and id(n.value) in calls]
        return found

    def _keywords_fit(self, call: ast.Call) -> bool:
        if self.omits is not None and any(k.arg in (self.omits, None) for k in call.keywords):
            return False
        if self.passes is None:
            return True
        name, literal = self.passes
        given = next((k.value for k in call.keywords if k.arg == name), None)
        return isinstance(given, ast.Constant) and type(given.value) in (bool, int) and given.value == literal


@dataclass(frozen=True)
class _CallsNamed:
    """The calls of one of ``names`` (``Call``'s question short of keywords), with the nodes of
    the statements read for them."""

    names: Tuple[str, ...]
    method: bool
    aliases: bool
    not_on: FrozenSet[str]

    def __call__(self, index: TreeIndex) -> Tuple[List[ast.Call], List[ast.AST]]:
        # Called by ``index.derived``, which keeps the answer under this value: every ``Call`` of
        # the same names shares it (a bound method would be a key of its own per instance).
        # Only the statements that spell a name (or an alias) can call it.
        nodes = list(index.statements_spelling(self.names, headers=True))
        bare = set(self.names)
        if self.aliases:
            bare = self._aliases(index, nodes) | {name for name in self.names if not hasattr(builtins, name)}
            if bare - set(self.names):
                nodes = list(index.statements_spelling({*self.names, *bare}, headers=True))
        return [node for node in nodes if isinstance(node, ast.Call) and self._is_one(node.func, bare)], nodes

    def _is_one(self, func: ast.expr, bare: Set[str]) -> bool:
        if isinstance(func, ast.Attribute):
            return func.attr in self.names and not (isinstance(func.value, ast.Name) and func.value.id in self.not_on)
        return not self.method and isinstance(func, ast.Name) and func.id in bare

    def _aliases(self, index: TreeIndex, nodes: List[ast.AST]) -> Set[str]:
        """The local names bound to one of ``names``: by an import from a module, or by an
        assignment of an attribute of that name, not called (``c = torch.compile``, also in a
        conditional; not ``state = torch.load(f)``, which binds what the call returns)."""
        bound = {alias.asname or alias.name for stmt in index.imports if isinstance(stmt, ast.ImportFrom)
                 for alias in stmt.names if alias.name in self.names}
        called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        if not any(isinstance(n, ast.Attribute) and n.attr in self.names and id(n) not in called for n in nodes):
            return bound  # every ``x.name`` here is called: no assignment binds the function itself
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                inside = list(ast.walk(node.value))
                called = {id(n.func) for n in inside if isinstance(n, ast.Call)}
                if any(isinstance(v, ast.Attribute) and v.attr in self.names and id(v) not in called for v in inside):
                    bound.update(name for target in assignment_targets(node) for name in bound_names(target))
        return bound


@dataclass(frozen=True)
class _Named(Need):
    """A shape about some names, given one by one: ``Defines("f", "g")``."""

    names: Tuple[str, ...]

    def __init__(self, *names: str) -> None:
        object.__setattr__(self, "names", names)


@dataclass(frozen=True, init=False)
class Defines(_Named):
    """A function of one of ``names``, at any depth."""

    def text(self) -> Tuple[str, ...]:
        return (r"def\s+" + one_of(self.names) + r"\b",)

    def found_in(self, index: TreeIndex) -> bool:
        return not index.function_names.isdisjoint(self.names)


@dataclass(frozen=True)
class LoopOver(Need):
    """A ``for`` loop over something a name of which ``accepts`` (``for x, y in train_loader``),
    with the regex every such name matches."""

    accepts: Callable[[str], bool]
    spelled: Optional[str] = None

    def text(self) -> Tuple[str, ...]:
        return (self.spelled,) if self.spelled else ()

    def found_in(self, index: TreeIndex) -> bool:
        return any(self.accepts(name) for _, loop in index.loops for name in iterable_names(loop))


@dataclass(frozen=True)
class LoopBinds(Unspelled):
    """A loop body that binds a name (``h`` of ``self.h``) ``accepts`` takes."""

    accepts: Callable[[str], bool]

    def found_in(self, index: TreeIndex) -> bool:
        for _, loop in index.loops:
            for node in loop_statements(loop):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
                        self.accepts(name) for target in assignment_targets(node) for name in bound_names(target)):
                    return True
        return False


@dataclass(frozen=True, init=False)
class ImportTimeCall(_Named):
    """Code that runs at import calls one of ``names`` or a function of the file."""

    def text(self) -> Tuple[str, ...]:
        return ()

    def found_in(self, index: TreeIndex) -> bool:
        wanted = index.function_names.union(self.names)
        return any(isinstance(n, ast.Call) and called_name(n) in wanted for n in index.import_time_nodes())


@dataclass(frozen=True)
class LoopCallsImported(Need):
    """A loop calls a function the file imports from what may be a module of its project
    (``from .engine import train_step``: ``TreeIndex.project_imports``); with ``handing``,
    hands it an argument whose name ``handing`` accepts (``train_step(model, optimizer)``),
    spelled as ``spelled`` matches."""

    handing: Optional[Callable[[str], bool]] = None
    spelled: Optional[str] = None

    def text(self) -> Tuple[str, ...]:
        # ``\bimport\b``: ``from .engine import(step)`` has no space.
        return (r"\bimport\b",) + ((self.spelled,) if self.handing and self.spelled else ())

    def found_in(self, index: TreeIndex) -> bool:
        for _, loop in index.loops:
            for call in index.calls_of_imports(loop.body + loop.orelse):
                if self.handing is None or any(
                        isinstance(v, (ast.Name, ast.Attribute)) and self.handing(last_name(ast_dotted(v) or ""))
                        for v in (*call.args, *(k.value for k in call.keywords))):
                    return True
        return False


@dataclass(frozen=True)
class Indexed(Need):
    """``x.attribute[key]`` (a literal key), also through calls without arguments of the methods
    ``through`` (``x.data.cpu()[0]``)."""

    attribute: str
    key: object
    through: FrozenSet[str] = frozenset()

    def text(self) -> Tuple[str, ...]:
        return (re.escape(self.attribute), r"\[\s*" + re.escape(repr(self.key)) + r"\s*\]")

    def found_in(self, index: TreeIndex) -> bool:
        # The statements that spell the attribute: ``x.data[0]``, also spaced or continued
        # (``x. data[0]``), which a search for ``.data`` missed.
        return any(self._indexes(node) for node in index.statements_spelling([self.attribute]))

    def _indexes(self, node: ast.AST) -> bool:
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and node.slice.value == self.key):
            return False
        expr = node.value
        while isinstance(expr, ast.Call) and not expr.args and isinstance(expr.func, ast.Attribute) \
                and expr.func.attr in self.through:
            expr = expr.func.value
        return isinstance(expr, ast.Attribute) and expr.attr == self.attribute


@dataclass(frozen=True)
class ActivationReachesLoss(FollowsValues, Unspelled):
    """A value that went through ``activation`` last (``SOFTMAX``) may reach a loss of kind
    ``loss`` (``"cross_entropy"``): ``tree_gate.activation_may_reach_loss``, the ast reading of
    ``model/activations.py``."""

    loss: str
    activation: str

    def found_in(self, index: TreeIndex) -> bool:
        return activation_may_reach_loss(index, self.loss, self.activation)


@dataclass(frozen=True)
class TorchBefore(Unspelled):
    """The project's target torch (``target-torch-version``, or its dependencies' lower bound)
    is older than ``version``: a default that changed there still applies."""

    version: Tuple[int, ...]

    def found_in(self, index: TreeIndex) -> bool:
        return index.target_torch < self.version


@dataclass(frozen=True)
class EvaluationLoop(Unspelled):
    """A loop that runs a model (a model-named call, or a name built by a constructor) over
    evaluation data or in a function named like evaluation (``TreeIndex.evaluation_loops``)."""

    def found_in(self, index: TreeIndex) -> bool:
        return index.evaluation_loops()


@dataclass(frozen=True)
class CallsItsOwn(Unspelled):
    """A function of the file whose name ``accepts`` takes (``evaluate``) is called here: its name
    stands before a parenthesis more often than it is defined. One nobody here calls is for
    callers elsewhere (a library's ``test_*`` model builders)."""

    accepts: Callable[[str], bool]

    def found_in(self, index: TreeIndex) -> bool:
        names = {name for name in index.function_names if self.accepts(name)}
        if not names:
            return False
        # Every name before a parenthesis, kept when it is one of ours: one alternative per
        # name would make ``re`` try them all at every position (quadratic in a big file).
        seen = Counter(name for name in _CALLED_NAME.findall(index.code_text()) if name in names)
        return any(seen[name] > len(index.definitions[name]) for name in names)


_CALLED_NAME = re.compile(r"\b(\w+)\s*\(")


@dataclass(frozen=True)
class ImportTimeForward(Unspelled):
    """Code that runs at import (a script's) calls what may be a forward pass on an argument
    naming something ``reads`` accepts (``model(X_test)``)."""

    reads: Callable[[str], bool]

    def found_in(self, index: TreeIndex) -> bool:
        return any(isinstance(n, ast.Call) and may_be_forward(n)
                   and any(self.reads(name) for arg in n.args for name in names_in(arg))
                   for n in index.import_time_nodes())


@dataclass(frozen=True)
class SwitchesToTraining(Need):
    """``m.train()``, ``m.train(True)``, ``m.train(mode=1)``: a switch ``modes.mode_switch`` may
    read as to training. Not ``self.head.train(self.training)``, which passes a mode on (a
    model library's ``train`` override), nor ``train(False)``."""

    def text(self) -> Tuple[str, ...]:
        return (call_spelling(("train",), method=True),)

    def found_in(self, index: TreeIndex) -> bool:
        for node in index.statements_spelling(["train"], headers=True):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train" \
                    and len(node.args) <= 1:
                flags = train_mode_flags(node)
                flag = flags[0] if flags else None
                if flag is None or (isinstance(flag, ast.Constant) and (flag.value is True or type(flag.value) is int)):
                    return True
        return False


# -- what several rules need ------------------------------------------------------
BACKWARD = Call(*BACKWARD_METHODS)  # ``training_calls.is_backward``'s calls
STEP = Call("step", method=True)  # an optimizer's (or a scaler's) step
# Might some code here backpropagate? Asked of the code, not of its docstrings' examples
# (``>>> loss.backward()`` in a model's docs).
COMPUTES_GRADIENTS = Text(GRADIENT_CODE)
TRAINS = COMPUTES_GRADIENTS | Text(r"\.step\(")  # backpropagates or steps an optimizer
TRAINING_STEP = Defines("training_step")  # Lightning's hook: one training iteration
# ``torch.compile`` however the file spells it (``model_compile.compile_calls`` asks the qualified
# name); ``re.compile`` is not, nor Python's builtin ``compile``.
_OTHER_COMPILES = ("re", "regex")
TORCH_COMPILE = Text(r"\btorch\b") & Call("compile", aliases=True, not_on=_OTHER_COMPILES)
TORCH_COMPILE_DISCARDED = Text(r"\btorch\b") & Call("compile", aliases=True, not_on=_OTHER_COMPILES, discarded=True)
