"""Shapes about leaves and in-place writes (TL401's): where a write to a tensor that requires
grad may stand in code whose grad mode is known. Each reads Python's tree the way
``model/leaves.py`` reads libcst's, and may say yes more often, never less."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Optional, Set, Tuple, Union

from torchlint.model.ast_reading import InPlaceWrite, assignment_targets, ast_dotted, bound_names, flat_targets
from torchlint.model.ast_reading import in_place_write, written_by
from torchlint.model.parameters import LAYER_PARAMETERS, PARAMETER_ATTRS
from torchlint.model.vocab import PARAMETER_ITERATORS
from torchlint.needs.shapes import COMPUTES_GRADIENTS, FollowsValues, Unspelled
from torchlint.tree_gate import TreeIndex, all_nodes, called_name, own_nodes

if TYPE_CHECKING:
    from torchlint.model.project import ProjectView


@dataclass(frozen=True)
class ImportTimeLeafWrite(FollowsValues, Unspelled):
    """Code run at import (a script's, a notebook's) makes a leaf and writes in place, or writes
    to what may be a parameter of a model built elsewhere (``model.fc.weight.mul_(0.5)``)."""

    def found_in(self, index: TreeIndex) -> bool:
        return _import_time_leaf_writes(index)


@dataclass(frozen=True)
class ImportTimeCodeWrites(FollowsValues, Unspelled):
    """Import-time code builds a class of the file or calls one of its functions (``model =
    Net()``), and what that runs writes in place to something not plainly a local list."""

    def found_in(self, index: TreeIndex) -> bool:
        return _import_time_construction(index)


@dataclass(frozen=True)
class ForwardWritesSelfParameter(FollowsValues, Unspelled):
    """A file with a ``forward`` writes in place to a parameter of ``self`` (``self.w.clamp_()``), or
    a function writes to an argument some call hands such a parameter (``clip_(self.w)``)."""

    def found_in(self, index: TreeIndex) -> bool:
        return _forward_writes_self(index)


@dataclass(frozen=True)
class LeafHandedToAProjectWriter(FollowsValues, Unspelled):
    """A function of another module of the project, handed what may be a leaf, writes that
    parameter in place (its summary's ``may_write_in_place``), called from module-level code or in a
    file that backpropagates."""

    def found_in(self, index: TreeIndex) -> bool:
        return _hands_to_a_project_writer(index)


def _import_time_leaf_writes(index: TreeIndex) -> bool:
    """A leaf made and written in place when the module runs (scripts,
    notebooks), or a write there to what may be a parameter of a model built elsewhere
    (``model.fc.weight.mul_(0.5)``, ``model.scale.clamp_(0)``: an attribute named as a layer's
    ``weight``/``bias`` or as an ``nn.Parameter`` the file binds)."""
    nodes = index.import_time_nodes()
    writes = [n for n in nodes if in_place_write(n)]
    if not writes:
        return False
    if any(map(_makes_a_leaf, nodes)):
        return True
    params = {"weight", "bias"} | _parameter_attributes(index)
    return any(_named_parameter(written_by(n), params) for n in writes)


def _import_time_construction(index: TreeIndex) -> bool:
    """Import-time code builds a class of this file (``model = Net()``) or calls one of its
    functions, and what that runs writes in place somewhere. Model files of libraries call
    their own config helpers at import (``_cfg(...)``): those write nothing."""
    for definition, nodes in index.reached(n for n in index.import_time_callees() if n is not None):
        writes = [n for n in nodes if in_place_write(n)]
        if writes:  # most reached code writes nothing: its locals need no reading
            plain = _plain_locals(definition)
            if any(_written_name(n) not in plain.get(n.lineno, ()) for n in writes):
                return True
    return False


def _written_name(node: InPlaceWrite) -> Optional[str]:
    """``cfgs`` of ``cfgs += [...]`` and of ``mat[i][j] = v``; None for ``lin.weight.add_()``."""
    target = written_by(node)
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _plain_locals(definition: ast.AST) -> dict:
    """line -> the local names of a function that hold no leaf there: bound before that line,
    and only by ``name = value`` with a value ``_makes_a_leaf`` refuses (``[]``, ``{}``,
    ``np.zeros(4)``), never by anything else (a parameter, a loop, ``global``, a lambda's
    argument). Config helpers build their lists so (``cfgs += [...]``); the rule reads such a
    name's binding (``leaf_bindings``) and finds no leaf."""
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    own = list(own_nodes(definition.body))
    first: Dict[str, int] = {}
    literal_targets: Set[int] = set()
    for node in own:
        if isinstance(node, ast.Assign) and not _makes_a_leaf(node.value) \
                and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                assert isinstance(target, ast.Name)  # all are
                first.setdefault(target.id, node.lineno)
                literal_targets.add(id(target))
        elif isinstance(node, ast.AugAssign):  # the write itself: no binding to the model either
            literal_targets.add(id(node.target))
    args = definition.args
    other = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    for node in own:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in literal_targets:
            other.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
    names = {name: line for name, line in first.items() if name not in other}
    lines = {node.lineno for node in own if in_place_write(node)}
    return {line: {name for name, at in names.items() if at < line} for line in lines}


def _hands_to_a_project_writer(index: TreeIndex) -> bool:
    """A call of a function of another module of the project, handed what may be a leaf, that
    writes that parameter in place (``_handed_to_the_project``), in module-level code or in a
    file that backpropagates; the project index is asked only of such calls. What may be a
    leaf: a name made one in the file (or a loop variable), a layer's parameter, an attribute
    bound to an ``nn.Parameter``."""
    imported, star = index.names_from_project()
    if not imported and not star:
        return False
    nodes = index.module_nodes() if COMPUTES_GRADIENTS.found_in(index) else index.import_time_nodes()
    calls = [node for node in nodes if isinstance(node, ast.Call) and (node.args or node.keywords)
             and (star or (ast_dotted(node.func) or "").split(".", 1)[0] in imported)]
    if calls:
        names, attrs = index.derived(_leaf_spellings)
        roots = {path.split(".", 1)[0] for path in names}
        calls = [call for call in calls if any(
            (path := ast_dotted(arg)) is not None
            and (path in names or path.split(".", 1)[0] in roots or path.rsplit(".", 1)[-1] in attrs)
            for arg in (*call.args, *(k.value for k in call.keywords)))]
    project = index.project() if calls else None
    return project is not None and any(_writes_in_place_in_the_project(index, project, call, imported)
                                       for call in calls)


def _writes_in_place_in_the_project(index: TreeIndex, project: ProjectView, call: ast.Call,
                                     imported: frozenset) -> bool:
    callee = ast_dotted(call.func)
    if callee is None or callee.count(".") > 1:
        return False
    if callee.split(".", 1)[0] in imported:
        origin = index.imported_from(callee)
        summary = project.function_of(*origin) if origin is not None else None
    elif "." not in callee:  # ``from utils import *``: found as ``project_calls`` finds it
        stars = [(m.module or "", m.level) for m in index.imports
                 if isinstance(m, ast.ImportFrom) and m.names[0].name == "*"]
        summary = project.star_imported_function(stars, callee)
    else:
        return False
    return summary is not None and summary.may_write_in_place


def _leaf_spellings(index: TreeIndex) -> Tuple[Set[str], Set[str]]:
    """What ``_Leaves.requires_grad_at`` may take for a leaf, short of a helper's parameter: the
    names and attribute paths that statements spelling ``requires_grad`` or ``Parameter`` bind or
    call a method on (``w = nn.Parameter(t)``, ``w.requires_grad = True``, ``w.requires_grad_()``)
    and the variables of loops over a literal list or a ``parameters()`` call; the attributes a
    layer's or a class's parameter may end in."""
    names: Set[str] = set()
    for node in index.statements_spelling(["requires_grad", "Parameter"]):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = [t.value if isinstance(t, ast.Attribute) and t.attr == "requires_grad" else t
                       for t in assignment_targets(node)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            targets = [node.func.value]  # ``w.requires_grad_()``
        else:
            continue
        names.update(path for target in targets for t in flat_targets(target)
                     if (path := ast_dotted(t)) is not None and path not in ("self", "cls"))
    for _, loop in index.loops:
        if isinstance(loop, (ast.For, ast.AsyncFor)) and (
                isinstance(loop.iter, (ast.List, ast.Tuple)) or _makes_a_leaf(loop)):
            names.update(bound_names(loop.target))
    attrs = set(PARAMETER_ATTRS) | _parameter_attributes(index)
    attrs.update(attr for params in LAYER_PARAMETERS.values() for attr in params)
    # ``model.w`` of a model class whose ``__init__`` binds ``self.w`` to a leaf
    attrs.update(path.rsplit(".", 1)[-1] for path in names if "." in path)
    return names, attrs


def _forward_writes_self(index: TreeIndex) -> bool:
    """A file with a ``forward`` writes in place to a parameter of ``self`` (a layer's
    ``weight``/``bias``, an attribute bound to ``nn.Parameter``: ``self.w.clamp_()``), or
    a function writes to an argument where some call hands it such a parameter
    (``clip_(self.w)``). Writes to a forward's plain arguments (``x += residual``),
    counters and caches of ``self`` cannot reach a parameter, and are everywhere in
    model code. Both need ``.w`` written in a statement: only the statements on lines
    that say it are walked, not the file's every method."""
    if "forward" not in index.definitions:
        return False
    params = {"weight", "bias"} | _parameter_attributes(index)
    # ``.w`` spelt, spaced or continued: a bare ``bias``/``weight`` is on most lines of model code.
    mentions = re.compile(r"\.[\s\\]*(?:" + "|".join(map(re.escape, sorted(params))) + r")\b")
    nodes = list(index.statements_spelling(mentions, recording=True))
    if any(in_place_write(node) and _self_parameter(written_by(node), params) for node in nodes):
        return True
    for name, slots in _handed_parameters(nodes, params).items():
        for definition in index.definitions.get(name, ()):
            receiving = _receiving(definition, slots)
            if any(in_place_write(n) and _written_root(n) in receiving for n in all_nodes(definition)):
                return True
    return False


def _handed_parameters(nodes: list, params: set) -> dict:
    """callee name -> the argument positions and keywords where some call hands it a
    parameter of ``self`` (``clip_(x, self.w)``: ``{"clip_": {1}}``); ``"*"`` after a
    ``*args``, where positions are unknown."""
    handed: Dict[Optional[str], Set[Union[int, str]]] = {}
    for call in nodes:
        if not isinstance(call, ast.Call):
            continue
        slots = {i if not isinstance(arg, ast.Starred) else "*" for i, arg in enumerate(call.args)
                 if _self_parameter(arg, params) or isinstance(arg, ast.Starred)}
        slots |= {k.arg or "*" for k in call.keywords if k.arg is None or _self_parameter(k.value, params)}
        if slots - {"*"}:
            handed.setdefault(_callee_name(call), set()).update(slots)
    return handed


def _receiving(definition: ast.AST, slots: set) -> set:
    """The names of ``definition``'s parameters that the ``slots`` of a call bind (a
    position counts for a method's too, shifted past ``self``); every name after
    ``*args``, and of the functions inside it (a helper's helper may write what it is
    handed on) or of a class's methods."""
    names = set()
    for function in (n for n in all_nodes(definition) if isinstance(n, ast.FunctionDef)):
        args = function.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        everything = {*positional, *(a.arg for a in args.kwonlyargs)}
        if "*" in slots or function is not definition:
            names |= everything
            continue
        names |= {s for s in slots if isinstance(s, str) and s in everything}
        names |= {positional[i + shift] for i in slots if isinstance(i, int)
                  for shift in (0, 1) if i + shift < len(positional)}
    return names


def _parameter_attributes(index: TreeIndex) -> set:
    """``w`` of every ``x.w = nn.Parameter(...)`` in the file (any callee with Parameter in its name)."""
    return {target.attr for n in index.statements_spelling(["Parameter"])
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
            and "Parameter" in (_callee_name(n.value) or "")
            for target in n.targets if isinstance(target, ast.Attribute)}


def _callee_name(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _self_parameter(node: ast.AST, params: set) -> bool:
    """``self.w``, ``self.fc.weight``, ``self.emb.weight[0]`` with a last attribute in ``params``."""
    return _named_parameter(node, params) == "self"


def _named_parameter(node: ast.AST, params: set) -> Optional[str]:
    """The name ``model.fc.weight`` and ``model.fc.weight[0]`` start from when their last
    attribute is in ``params``; None otherwise."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if not isinstance(node, ast.Attribute) or node.attr not in params:
        return None
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _written_root(node: InPlaceWrite) -> Optional[str]:
    """The name a write starts from: ``self`` for ``self.w.clamp_()`` and ``self.w[0] = 0``."""
    target = written_by(node)
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _makes_a_leaf(node: ast.AST) -> bool:
    """``nn.Parameter(...)``, ``requires_grad=True``, ``.requires_grad_()``, ``for p in m.parameters()``,
    ``x.requires_grad = True``."""
    if isinstance(node, ast.Assign):
        return (isinstance(node.value, ast.Constant) and node.value.value is True
                and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets))
    if isinstance(node, ast.Call):
        return (called_name(node) in ("Parameter", "requires_grad_")
                or any(k.arg == "requires_grad" for k in node.keywords))
    if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call):
        return called_name(node.iter) in PARAMETER_ITERATORS
    return False
