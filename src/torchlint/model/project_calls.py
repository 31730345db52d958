"""Calls of the project's own functions, read through what they do.

``from .metrics import measure`` then ``measure(net, val_loader)`` after ``net.eval()``:
the forward pass is in another module, the evaluation is here. What the function does with
its parameters (``function_effects.effects``) is asked of the model of its own module, built
as a lint of that module builds it (``project_callee(...).ask(fact)``: any fact the file
defines, on that module's model); this module binds the call's arguments to the parameters
and answers the questions rules ask at the call: does it run a model forward in evaluation
code, does the value it returns carry a graph, does it keep a retained graph each time a
loop calls it. A file with no project, or a function the index cannot find, gets None:
judged as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Tuple, Union

from torchlint.model import modes, vocab
from torchlint.model.ast_reading import imported_module
from torchlint.model.evaluation import evaluation_only
from torchlint.model.expr import dotted, identifiers
from torchlint.model.function_effects import FunctionEffects, effects, returns_plain
from torchlint.model.grad import GradMode
from torchlint.model.records import Span

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.model import FileModel
    from torchlint.model.project import ProjectFunction
    from torchlint.model.records import CallSite, Scope


def project_function(file_model: FileModel, call: CallSite) -> Optional[FunctionEffects]:
    """What the project function ``call`` runs does (``function_effects.effects``, asked of its
    module's model): ``evaluate(...)`` of ``from .metrics import evaluate``, ``net.evaluate(...)``
    of ``import models.net as net``."""
    callee = project_callee(file_model, call)
    return callee.ask(effects) if callee is not None else None


def project_callee(file_model: FileModel, call: CallSite) -> Optional[ProjectFunction]:
    """``project_function``'s function with its module, for a question beyond the summary
    (``ProjectFunction.ask``)."""
    callee = call.callee
    if callee is None or callee.count(".") > 1:
        return None
    head = callee.split(".", 1)[0]
    if head not in file_model.names.origins:
        if "." in callee or not file_model.names.star_imports or callee in file_model.bound_here:
            return None  # most calls: nothing imported, no index asked
        return file_model.derived(_star_imported, callee)  # ``from utils import *`` then ``compute_loss(...)``
    if not file_model.derived(_names_a_project_module, head, head != callee):
        return None
    if file_model.names.qualify(callee) is not None or file_model.resolve(call) is not None:
        return None  # torch's own, or a function of this file
    return file_model.derived(_imported, callee)


def _names_a_project_module(file_model: FileModel, head: str, dotted_call: bool) -> bool:
    """Whether a call headed by the imported name ``head`` (``head.f(...)`` when ``dotted_call``,
    else ``head(...)``) may run a function of the project: the module the index would first
    look in (``ast_reading.imported_module``) is one of the project's. Asked once per name
    and spelling: most calls of a file are of libraries' names (``np.mean``, ``plt.plot``)."""
    names = file_model.names
    if head in names.aliases:
        return False  # torch's names are no project's (``project_callee`` drops them), nor looked for
    project = file_model.project
    if project is None:
        return False
    found = imported_module(names.origins[head], dotted_call)
    return found is not None and project.holds_module(*found)


def _star_imported(file_model: FileModel, name: str) -> Optional[ProjectFunction]:
    """Function ``name`` of the last project module that a ``from module import *`` of this
    file finds it in (the one whose binding Python keeps)."""
    project = file_model.project
    return project.star_imported(file_model.names.star_imports, name) if project is not None else None


def _imported(file_model: FileModel, callee: str) -> Optional[ProjectFunction]:
    project, origin = file_model.project, file_model.names.imported_from(callee)
    return project.function(*origin) if project is not None and origin is not None else None


def argument(call: CallSite, params: Tuple[str, ...], param: str) -> Optional[cst.BaseExpression]:
    """The expression ``call`` passes for ``param`` of a function whose positional parameters
    are ``params``, or None."""
    args = call.node.args
    if any(a.star for a in args):
        return None  # ``f(*args)``: which argument lands where cannot be told
    for a in args:
        if a.keyword is not None and a.keyword.value == param:
            return a.value
    if param not in params:
        return None
    positional = [a for a in args if a.keyword is None]
    index = params.index(param)
    return positional[index].value if index < len(positional) else None


def _runs_model(file_model: FileModel, expr: Optional[cst.BaseExpression], switched: frozenset = frozenset()) -> bool:
    path = dotted(expr) if expr is not None else None
    if path is None:
        return False
    key = modes.model_key(path)
    return path in file_model.roles.models or key in switched or vocab.is_model_name(key)


# -- graph taint --------------------------------------------------------------
def returned_graph(file_model: FileModel, call: CallSite) -> Union[bool, Tuple[bool, ...], None]:
    """Does the value ``call`` returns carry a graph: True, False, a tuple of answers for a
    function that returns tuples, or None where that cannot be told (no project function, or no answer)."""
    callee = project_callee(file_model, call)
    does = callee.ask(effects) if callee is not None else None
    if callee is None or does is None:
        return None
    if callee.ask(returns_plain):
        return False  # ``return loss.item()``: a float, whatever the name says
    if does.returned_elements is not None:
        return tuple(_carries(file_model, call, does, labels) for labels in does.returned_elements)
    if does.returns_loss or _carries(file_model, call, does, does.returned_outputs):
        return True
    return None


def _carries(file_model: FileModel, call: CallSite, does: FunctionEffects, labels: Iterable[str]) -> bool:
    """A loss computed inside, or the output of a parameter the call binds to a model or criterion."""
    if any(label not in does.params for label in labels):
        return True
    for param in labels:
        expr = argument(call, does.params, param)
        path = dotted(expr) if expr is not None else None
        if path is not None and (path in file_model.roles.criteria or _runs_model(file_model, expr)):
            return True
    return False


# -- evaluation ---------------------------------------------------------------
def evaluation_forwards(file_model: FileModel, scope: Scope) -> Iterator[CallSite]:
    """Calls in ``scope`` of project functions that run a model forward with grad on, from
    evaluation code here (after ``model.eval()``, over a validation loader, in a function
    that evaluates), where nothing in that code wants gradients. A function whose own
    module already reports its forward (it calls ``eval()`` itself, or evaluates in a
    loop under an evaluation name) is left to that report."""
    candidates = [(call, does) for call, does in ((c, _forwarding(file_model, c)) for c in scope.calls)
                  if does is not None and does.forwards and not does.needs_grad
                  and not does.evaluates_itself]
    if not candidates:
        return
    switches = modes.mode_switches(file_model, scope.calls)
    switched = frozenset(modes.model_key(s.receiver) for s in switches)
    for call, does in candidates:
        if file_model.grad_at(call.site) is not GradMode.GRAD:
            continue
        models = [dotted(e) for e in (argument(call, does.params, p) for p in sorted(does.forwards))
                  if _runs_model(file_model, e, switched)]
        if not models:
            continue
        if not (does.forward_in_loop or file_model.repeats(call)):
            continue  # one batch run once: no evaluation over a dataset
        if call.site.loop is None and does.returned_outputs and file_model.flows_to_return(call):
            continue  # an output handed back: the caller may want its graph
        span = _evaluation_span(file_model, scope, call, models, switches)
        if span is not None and not _wants_gradients(file_model, span):
            yield call


def _forwarding(file_model: FileModel, call: CallSite) -> Optional[FunctionEffects]:
    """``project_function``, for a function that calls one of its parameters (its module is
    parsed only then)."""
    callee = project_callee(file_model, call)
    return callee.ask(effects) if callee is not None and callee.summary.calls_a_parameter else None


def _evaluation_span(file_model: FileModel, scope: Scope, call: CallSite, models: list,
                     switches: list) -> Optional[Tuple[int, int]]:
    """The stretch of code that makes ``call`` evaluation, as (start, end), or None."""
    last = None
    for switch in switches:
        if switch.order < call.order and any(modes.same_model(switch.receiver, m) for m in models):
            last = switch
    if last is not None:
        if last.to_eval is not True:
            return None  # back in training mode (or a mode we cannot read)
        ends = [s.order for s in switches if s.order > last.order and s.to_eval is not True
                and modes.same_model(s.receiver, last.receiver)]
        return last.order, min(ends, default=scope.end)
    loop = call.site.loop
    while loop is not None:
        if loop.iter is not None and any(vocab.is_eval_loader_name(n) for n in identifiers(loop.iter)):
            return loop.start, loop.end
        loop = loop.parent
    if not scope.is_module and (vocab.is_eval_function_name(scope.name) or evaluation_only(file_model, scope)):
        return scope.start, scope.end
    return None


def _wants_gradients(file_model: FileModel, span: Tuple[int, int]) -> bool:
    """Input gradients, an attack, test-time training: a backward or a step in the span, here
    or in a project function it calls."""
    for call in file_model.reachable_calls(Span(*span)):
        if file_model.needs_autograd(call):
            return True
        does = project_function(file_model, call)
        if does is not None and does.needs_grad:
            return True
    return False


# -- retained graphs ----------------------------------------------------------
def retains_graph(file_model: FileModel, call: CallSite) -> Optional[FunctionEffects]:
    """The effects of a project function whose last backward keeps its graph
    (``backward(retain_graph=True)``), one it built or one the call hands it
    (``does.retained_params``), for a call of it, else None."""
    does = project_function(file_model, call)
    return does if does is not None and (does.retained_backward or does.retained_params) else None
