"""Shapes of evaluation and inference code (TL101's and TL107's): where a forward may run over
held-out data, after an eval switch, in a sampling or decoding loop, or only to read numbers
off. Each reads Python's tree the way ``model/evaluation.py`` and TL101 read libcst's, and
may say yes more often, never less."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Set, Union

from torchlint.model.ast_reading import assignment_targets, flat_targets
from torchlint.model.vocab import EVAL_DATA_TOKENS, FORWARD_METHODS, NUMBER_READ_METHODS, PICKS_FROM_AN_OUTPUT
from torchlint.model.vocab import SERVING_METHODS, is_eval_data_name, is_eval_function_name, is_eval_loader_name
from torchlint.model.vocab import is_generation_function_name, is_model_name, token_spelling, unwrapped_module
from torchlint.needs.shapes import FollowsValues, Unspelled
from torchlint.text_gate import EVAL_SWITCH_CALL, text_search
from torchlint.tree_gate import TreeIndex, all_nodes, called_name, dotted, forward_callee, iterable_names
from torchlint.tree_gate import loop_nodes, may_be_forward, offsets, own_nodes, own_statements, runs_without_grad
from torchlint.tree_gate import names_in, repeated_calls, statement_nodes, train_mode_flags, turns_grad_off


@dataclass(frozen=True)
class SwitchesToEvalAndRuns(FollowsValues, Unspelled):
    """A body switches something to eval mode and runs it (or hands it to a helper of the file)."""

    def found_in(self, index: TreeIndex) -> bool:
        return _switches_and_runs(index)


@dataclass(frozen=True)
class HandsAModelToAnImport(FollowsValues, Unspelled):
    """A model handed to a helper the file imports from its project, after an eval switch or in evaluation."""

    def found_in(self, index: TreeIndex) -> bool:
        return _hands_model_to_import(index)


@dataclass(frozen=True)
class GuardsABackward(FollowsValues, Unspelled):
    """A backward under an ``if``: training guarded by a flag or a phase."""

    def found_in(self, index: TreeIndex) -> bool:
        return _guards_a_backward(index)


@dataclass(frozen=True)
class HeldOutDataInALoop(FollowsValues, Unspelled):
    """A forward over held-out data (``cnn(test_x)``) in a loop."""

    def found_in(self, index: TreeIndex) -> bool:
        return _held_out_data_in_a_loop(index)


@dataclass(frozen=True)
class InferenceWithoutBackward(FollowsValues, Unspelled):
    """A script's body runs a model and reads numbers off it, with no backward."""

    def found_in(self, index: TreeIndex) -> bool:
        return _inference_without_backward(index)


@dataclass(frozen=True)
class SamplesWithRawParameters(FollowsValues, Unspelled):
    """Tensors trained by hand, read in a loop that only reads numbers."""

    def found_in(self, index: TreeIndex) -> bool:
        return _samples_with_raw_parameters(index)


@dataclass(frozen=True)
class GeneratesInALoop(FollowsValues, Unspelled):
    """A generating or predicting function runs a forward in its own loop."""

    def found_in(self, index: TreeIndex) -> bool:
        return _generates_in_a_loop(index)


@dataclass(frozen=True)
class ReadsNumbersOffAForward(FollowsValues, Unspelled):
    """A forward inside a number read (``model(x).item()``)."""

    def found_in(self, index: TreeIndex) -> bool:
        return _reads_numbers_off_a_forward(index)


@dataclass(frozen=True)
class CallsAHandWrittenForward(FollowsValues, Unspelled):
    """A function of the file computing with hand-trained tensors is called."""

    def found_in(self, index: TreeIndex) -> bool:
        return _calls_hand_written_forward(index)


@dataclass(frozen=True)
class BindsThenReadsNumbersInALoop(FollowsValues, Unspelled):
    """A loop binds a forward's result and reads numbers."""

    def found_in(self, index: TreeIndex) -> bool:
        return _binds_then_reads_numbers_in_a_loop(index)


@dataclass(frozen=True)
class ServesAfterEval(FollowsValues, Unspelled):
    """A serving method (``predict``) in a file that switches to eval mode."""

    def found_in(self, index: TreeIndex) -> bool:
        return _serving_method_after_eval(index)


_EVAL_SWITCH = text_search(EVAL_SWITCH_CALL + r"|\.training\s*=\s*False")


def _switches_and_runs(index: TreeIndex) -> bool:
    """A function (or the module) that switches something to eval mode and calls
    it, ``self`` or a model-named callee: the calls ``FileModel.is_forward`` takes
    for forward passes, given the switched models."""
    if not _EVAL_SWITCH(index.code_text()):
        return False
    everywhere = set()
    # A switch names ``eval``, ``train`` or ``training``: only bodies that spell one can switch.
    for owner, body in index.bodies_spelling(("eval", "train", "training")):
        switched: Set[str] = set()
        calls: List[ast.Call] = []
        grad_off: Set[int] = set()
        for node in index.nodes_of(body):
            if isinstance(node, ast.Call):
                receiver = _eval_switch_receiver(node)
                if receiver is not None:
                    switched.add(receiver)
                elif id(node) not in grad_off:
                    calls.append(node)
            elif isinstance(node, ast.Assign):
                switched.update(_training_flag_cleared(node))
            elif isinstance(node, (ast.With, ast.AsyncWith)) and turns_grad_off(node):
                # own_nodes yields a block before what it holds: its calls are known in time
                grad_off.update(id(n) for n in own_nodes(node.body) if isinstance(n, ast.Call))
        runs = [c for c in calls if switched and (
            may_be_forward(c) or forward_callee(c) in switched
            or (_hands_over(c, switched) and called_name(c) in index.function_names))]
        if runs and (owner in index.repeatable_functions()
                     or _repeats_or_reads_eval_data(index.nodes_of(body), runs)):
            return True
        everywhere |= switched
    return bool(everywhere) and _steps_parts_of(index, everywhere)


def _serving_method_after_eval(index: TreeIndex) -> bool:
    """What ``_serves_numbers`` needs: a method named like a serving entry point and an eval
    switch. (How it hands back numbers has too many spellings, ``float(...)`` among them, for
    the text to say.)"""
    if not _EVAL_SWITCH(index.code_text()):
        return False
    methods = index.method_ids()
    return any(id(f) in methods for name in SERVING_METHODS for f in index.definitions.get(name, ()))


def _repeats_or_reads_eval_data(nodes: list, calls: list) -> bool:
    """What ``check`` asks of every forward it reports, besides its function being run more
    than once: that the call repeats in its own code (``FileModel.repeats``) or reads
    evaluation data (``_on_eval_data``). A model library's ``self.eval()`` in ``__init__``
    before it builds its parts is neither."""
    repeated = repeated_calls(nodes)
    return any(id(call) in repeated or any(is_eval_data_name(name) for arg in call.args
                                           for name in names_in(arg)) for call in calls)


def _steps_parts_of(index: TreeIndex, switched: set) -> bool:
    """A ``while``/``range`` loop anywhere that calls a method of a switched model
    (``decoder.fc(h)`` in a decoding loop): ``_steps_a_part``, which takes no method of
    ``self`` for a part (a model library's ``self.eval()`` in ``__init__`` and its
    generation loops over ``self.layer(h)`` are no decoding of a model put in eval mode)."""
    for _, loop in index.loops:
        if not _steps(loop):
            continue
        for node in loop_nodes(loop):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                receiver = dotted(node.func.value) or ""
                holder = unwrapped_module(receiver)
                if holder != "self" and (holder in switched or receiver in switched):
                    return True
    return False


def _hands_model_to_import(index: TreeIndex) -> bool:
    """``measure(net, batches)`` of ``from .metrics import measure``, handed a model (model-named,
    or built here) after an ``eval()`` switch in the same body, or in a loop over evaluation
    data or of a function named like evaluation: the project index may know it runs the model."""
    def hands_model(call: ast.Call) -> bool:
        # constructed_names walks the whole module: asked last, for the few calls that get here
        paths = [dotted(a) for a in [*call.args, *(k.value for k in call.keywords)]]
        return any(p is not None and (is_model_name(p.rsplit(".", 1)[-1]) or p in index.constructed_names())
                   for p in paths)

    if _EVAL_SWITCH(index.code_text()):
        for body in index.bodies:
            calls = list(index.calls_of_imports(body))
            if calls and any(isinstance(n, ast.Call) and _eval_switch_receiver(n) for n in index.nodes_of(body)):
                if any(map(hands_model, calls)):
                    return True
    for function, loop in index.loops:
        if is_eval_function_name(function) or any(map(is_eval_loader_name, iterable_names(loop))):
            if any(map(hands_model, index.calls_of_imports(loop.body + loop.orelse))):
                return True
    return False


def _generates_in_a_loop(index: TreeIndex) -> bool:
    """A function named for generating or predicting whose own loop runs something that
    may be a forward (``sample`` with a greedy search over ``self.lstm``): what
    ``_generates`` reports, the encoder pass before the loop included."""
    owners = {owner for owner, _ in index.loops
              if owner and (is_generation_function_name(owner) or is_eval_function_name(owner))}
    parts = None
    outermost = {id(loop) for loop in index.outermost_loops}
    for owner in owners:
        for function in index.definitions.get(owner, ()):
            if isinstance(function, ast.ClassDef) or runs_without_grad(function):
                continue  # transformers' ``@torch.no_grad() def generate``
            parts = _forward_parts(index) if parts is None else parts
            if id(function) in parts:
                continue  # a decoder's ``decode`` that its ``forward`` calls: the check skips it
            # ``_generates`` needs a forward in a loop of the function (``_decodes``): not
            # bark's ``generate`` that embeds once, before handing the loop to another method.
            loops = [n for n in index.nodes_of(function.body) if id(n) in outermost]
            if any(isinstance(n, ast.Call) and (may_be_forward(n)
                                                or forward_callee(n) in index.constructed_names())
                   for n in own_nodes(loops)):
                return True
    return False


def _forward_parts(index: TreeIndex) -> set:
    """The ids of the methods ``FileModel.part_of_forward`` surely takes for parts of a forward:
    those a ``forward`` calls as ``self.name(...)``, at any remove (fewer, never more)."""
    methods = {name: [f for f in functions if id(f) in index.method_ids()]
               for name, functions in index.definitions.items()}
    found, todo = set(), [f for name in FORWARD_METHODS for f in index.definitions.get(name, ())
                          if not isinstance(f, ast.ClassDef)]
    while todo:
        for node in own_nodes(todo.pop().body):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                for method in methods.get(node.func.attr, ()):
                    if id(method) not in found:
                        found.add(id(method))
                        todo.append(method)
    return found


def _hands_over(call: ast.Call, switched: set) -> bool:
    """``measure(model, loader)`` after ``model.eval()``: the helper may run it."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return any(dotted(v) in switched for v in values)


PICKS_FROM_AN_OUTPUT = PICKS_FROM_AN_OUTPUT


def _runs_code_of_its_own(index: TreeIndex) -> bool:
    """Module-level loops, or a bare call of a function of the file (``main()``, in a
    ``__main__`` block too): ``_script``. Not ``default_cfgs = build_cfgs(...)``, which
    libraries do at import."""
    return any(not owner for owner, _ in index.loops) or any(
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id in index.function_names for stmt in index.import_time)


def _inference_without_backward(index: TreeIndex) -> bool:
    """A body that runs a model-named call and reads numbers off it (``.argmax()``,
    ``.item()``, ``multinomial``, ``.data``), with no backward of its own, in a module that runs code
    of its own (a script, a notebook): ``_pure_inference``."""
    if not _runs_code_of_its_own(index):
        return False
    for body in index.bodies:
        forward = cut = False
        for node in index.nodes_of(body):
            if isinstance(node, ast.Call):
                name = called_name(node)
                if name == "backward":
                    break
                forward = forward or may_be_forward(node) or (
                    forward_callee(node) in index.constructed_names())
                cut = cut or name in PICKS_FROM_AN_OUTPUT
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "data":
                cut = True  # ``q.max(1)[1].data[0]``: what ``_hands_back_numbers`` reads as a number
        else:
            if forward and cut:
                return True
    return False


_NUMBER_BUILTINS = frozenset(("int", "float", "bool", "round"))


def _reads_numbers_off_a_forward(index: TreeIndex) -> bool:
    """A call that may be a forward inside a number read (``.item()``, ``.tolist()``,
    ``.numpy()``, ``int(...)``): what ``_only_numbers`` reports, read off the ast (more,
    never fewer). Functions count in a module that runs code of its own, as
    ``_runs_as_a_script`` asks; module-level code always."""
    nodes = index.module_nodes() if _runs_code_of_its_own(index) else index.import_time_nodes()
    parameters = None
    for node in nodes:
        if not isinstance(node, ast.Call) or not (
                (isinstance(node.func, ast.Attribute) and node.func.attr in NUMBER_READ_METHODS)
                or (isinstance(node.func, ast.Name) and node.func.id in _NUMBER_BUILTINS)):
            continue
        for inner in ast.walk(node):
            if inner is node or not isinstance(inner, ast.Call):
                continue
            callee = forward_callee(inner)
            if may_be_forward(inner) or callee in index.constructed_names():
                return True
            if parameters is None:  # ``def pick(f, obs)``: roles may make ``f`` a model its callers pass
                parameters = {n.arg for n in index.module_nodes() if isinstance(n, ast.arg)}
            if callee in parameters:
                return True
    return False


def _binds_then_reads_numbers_in_a_loop(index: TreeIndex) -> bool:
    """A loop that binds what may be a forward to a name (``prob = model.pi(s)``, ``a = mu(s)``)
    and reads a number somewhere (``.item()``, ``int(...)``): what
    ``evaluation.bound_then_read_as_numbers`` needs, in a module that runs code of its own, as
    ``_only_numbers`` asks. A forward is a call of a model (by name, built in the file, or a
    parameter that roles may make one) or of a method of one (``_acts_with_a_model_of_the_file``)."""
    if not _runs_code_of_its_own(index):
        return False
    models = index.constructed_names() | {
        n.arg for n in index.module_nodes() if isinstance(n, ast.arg)}

    def may_run_a_model(call: ast.Call) -> bool:
        if may_be_forward(call) or forward_callee(call) in models:
            return True
        receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
        holder = unwrapped_module(receiver) if receiver is not None else None
        return holder is not None and (holder in models or is_model_name(holder.rsplit(".", 1)[-1]))

    for loop in index.outermost_loops:
        binds = reads = False
        for node in loop_nodes(loop):
            if isinstance(node, ast.Assign):
                binds = binds or (len(node.targets) == 1 and isinstance(node.targets[0], (ast.Name, ast.Tuple))
                                  and isinstance(node.value, ast.Call) and may_run_a_model(_innermost_call(node.value)))
            elif isinstance(node, ast.Call):
                reads = reads or (isinstance(node.func, ast.Attribute) and node.func.attr in NUMBER_READ_METHODS) \
                    or (isinstance(node.func, ast.Name) and node.func.id in _NUMBER_BUILTINS)
            if binds and reads:
                return True
    return False


def _innermost_call(call: ast.Call) -> ast.Call:
    """``q(s)`` of ``q(s).detach().max(1)``: the call a chain of method calls starts from."""
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


# Made to require grad (``evaluation.raw_parameters``): ``requires_grad = False`` freezes, it trains
# nothing. ``Parameter`` without its bracket: ``from torch.nn import Parameter as P`` then ``P(w)``;
# an annotation may come first: ``w.requires_grad: bool = True``.
_HAND_TRAINED = text_search(r"requires_grad_?\s*(?::[\s\S]*?)?[=(](?!\s*(?:False|0|None)\b)|Parameter\b")


def _samples_with_raw_parameters(index: TreeIndex) -> bool:
    """Tensors made to require grad and a loop that reads numbers off tensors with no
    backward in it: what ``_raw_parameter_steps`` looks for, in step loops."""
    if not _HAND_TRAINED(index.code_text()):
        return False
    params = None
    for owner, loop in index.loops:
        if owner and not is_generation_function_name(owner):
            continue  # TL101 looks at module-level code and generating functions only
        nodes = list(loop_nodes(loop))
        names = {called_name(n) for n in nodes if isinstance(n, ast.Call)}
        if names & PICKS_FROM_AN_OUTPUT and "backward" not in names:
            params = index.derived(_raw_parameter_paths) if params is None else params
            if any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in params for n in nodes):
                return True
    return False


def _calls_hand_written_forward(index: TreeIndex) -> bool:
    """A call of a function of the file (no method) that computes with a tensor made to require
    grad (``def net(x): return x @ W1 + b1``): what ``evaluation.hand_written_forward`` may take.
    Asked in the order that costs least: the tensors made to require grad (off the statements
    that spell them), the text for a call of such a function, and the called functions for the
    shapes TL101 counts as computing."""
    if not _HAND_TRAINED(index.code_text()):
        return False
    params = index.derived(_raw_parameter_paths)
    if not params:
        return False
    methods = index.method_ids()
    functions = {name: [f for f in index.definitions.get(name, ())
                        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(f) not in methods]
                 for name in index.function_names}
    called = _called_by_name(index.code_text(), [name for name, found in functions.items() if found])
    # A function can compute with ``self.w`` only where its text spells ``w``: most need no walk.
    names = {path.rsplit(".", 1)[-1] for path in params}
    lines = index.code_text().split("\n")
    for f in (f for name in called for f in functions[name]):
        text = "\n".join(lines[f.lineno - 1:f.end_lineno])
        if any(n in text for n in names) and any(path in params for path in _computed_with(f)):
            return True
    return False


def _called_by_name(code: str, names: List[str]) -> Set[str]:
    """The ``names`` the text calls as ``name(...)`` anywhere but in their ``def`` line (more,
    never fewer: a mention in a string counts; ``(name)(x)`` and a comment or a line break
    before the bracket are allowed for). ``str.find`` per name: one regex of every name
    tries each of them at every position of the file."""
    called = set()
    for name in names:
        for at in offsets(code, name):
            end = at + len(name)
            before = code[at - 1] if at else " "
            if not (before.isalnum() or before in "._") and _CALL_AFTER.match(code, end) \
                    and (end == len(code) or not (code[end].isalnum() or code[end] == "_")) \
                    and not _DEF_BEFORE.search(code[max(0, at - 12):at]):
                called.add(name)
                break
    return called


_CALL_AFTER = re.compile(r"(?:[\s)\\]|#[^\n]*)*\(")
# A ``def`` spaced out wider than this window reads as a call: one more function to look at.
_DEF_BEFORE = re.compile(r"\bdef\s+\Z")


def _computed_with(function: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> Iterator[str]:
    """The paths ``evaluation.computes_with`` may count in ``function``'s own values (what it
    assigns, loops over, enters and returns): indexed, an operand, or a call's argument."""
    for stmt in own_nodes(function.body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            roots = [stmt.value]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            roots = [stmt.iter]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            roots = [item.context_expr for item in stmt.items]
        else:
            continue
        for node in (n for root in roots if root is not None for n in all_nodes(root)):
            if isinstance(node, ast.Subscript):
                operands = [node.value]
            elif isinstance(node, ast.BinOp):
                operands = [node.left, node.right]
            elif isinstance(node, ast.Call):  # libcst's arguments: starred and keyword ones too
                operands = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
                operands += [keyword.value for keyword in node.keywords]
            else:
                continue
            yield from filter(None, map(dotted, operands))


def _raw_parameter_paths(index: TreeIndex) -> set:
    """Every path ``evaluation.raw_parameters`` may name, read off the tree (more, never
    fewer): targets of ``Parameter(...)`` and of calls given ``requires_grad=True``, tensors
    given ``requires_grad = True``/``requires_grad_()``, and, where such a tensor is the
    variable of a loop over a name (``for p in params: p.requires_grad = True``), every name
    in a list or tuple assigned to that name (``params = [C, W1]``). A model library's
    ``self.weight = nn.Parameter(...)`` is not used in a sampling loop. Read once per tree
    (``TreeIndex.derived``): two gates ask it. Only the statements that spell ``Parameter``,
    ``requires_grad`` or a name ``Parameter`` is imported as are read, and the whole file only
    where a loop over a list makes its elements trainable."""
    makers = {"Parameter"} | {alias.asname for n in index.imports
                              for alias in n.names if alias.asname and alias.name.endswith("Parameter")}
    nodes = index.statements_spelling(["requires_grad", *makers], headers=True)
    made: Set[Optional[str]] = set()
    forced: Set[Optional[str]] = set()
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):  # ``x.requires_grad: bool = True`` too
            targets = assignment_targets(node)
            if _makes_parameter(node.value, makers):
                made.update(dotted(t) for target in targets for t in flat_targets(target))
            if _may_be_true(node.value):
                forced.update(dotted(t.value) for t in targets
                              if isinstance(t, ast.Attribute) and t.attr == "requires_grad")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
            flag = node.args[0] if node.args else node.keywords[0].value if node.keywords else None
            if flag is None or _may_be_true(flag):
                forced.add(dotted(node.func.value))
    forced.discard(None)
    # ``for p in params: p.requires_grad = True`` makes trainable what ``params = [W1, b1]`` lists.
    lists = {dotted(loop.iter) for _, loop in index.loops if isinstance(loop, (ast.For, ast.AsyncFor))
             and not forced.isdisjoint(map(dotted, flat_targets(loop.target)))}
    lists.discard(None)
    found = made | forced
    if lists:
        found.update(dotted(e) for n in index.module_nodes() if isinstance(n, (ast.Assign, ast.AnnAssign))
                     and n.value is not None and any(dotted(t) in lists for t in assignment_targets(n))
                     for listed in all_nodes(n.value) if isinstance(listed, (ast.List, ast.Tuple))
                     for e in listed.elts)
    found.discard(None)
    return found


def _makes_parameter(value: Optional[ast.expr], makers: set) -> bool:
    """``nn.Parameter(...)`` (``P(...)`` after ``import ... Parameter as P``) or a call given
    ``requires_grad=True``: what ``evaluation._makes_parameter`` may take, whatever the callee."""
    if not isinstance(value, ast.Call):
        return False
    return (called_name(value) in makers or (dotted(value.func) or "").split(".", 1)[0] in makers
            or any(k.arg == "requires_grad" and _may_be_true(k.value) for k in value.keywords))


def _may_be_true(node: Optional[ast.expr]) -> bool:
    """What ``literal_bool`` may read as True: ``True`` or an integer literal (``0x0`` too)."""
    return isinstance(node, ast.Constant) and (node.value is True or type(node.value) is int)


def _steps(loop: ast.AST) -> bool:
    """A ``while`` loop or a loop over ``range(...)``: ``_in_step_loop``, read off the ast."""
    return isinstance(loop, ast.While) or (
        isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.iter, ast.Call)
        and called_name(loop.iter) in ("range", "reversed", "enumerate"))


_HELD_OUT = text_search(token_spelling(EVAL_DATA_TOKENS))  # every name ``is_eval_data_name`` takes


def _held_out_data_in_a_loop(index: TreeIndex) -> bool:
    """``cnn(test_x)`` inside a loop: a forward on held-out data, every few steps."""
    if not _HELD_OUT(index.code_text()):
        return False
    for loop in index.outermost_loops:
        for node in loop_nodes(loop):
            # Any name in an argument, as ``_runs_on_held_out_data`` reads them: ``cnn(x_test.cuda())``.
            if isinstance(node, ast.Call) and any(
                is_eval_data_name(name) for arg in (*node.args, *(k.value for k in node.keywords))
                for name in names_in(arg)
            ) and (may_be_forward(node) or forward_callee(node) in index.constructed_names()):
                return True
    return False


def _guards_a_backward(index: TreeIndex) -> bool:
    """An ``if`` around a backward: ``if train: loss.backward()``, ``if phase == "train":``."""
    for body in index.bodies_mentioning("backward"):
        for node in own_statements(body):
            if isinstance(node, ast.If) and any(
                isinstance(n, ast.Call) and called_name(n) == "backward"
                for stmt in node.body for n in statement_nodes(stmt)
            ):
                return True
    return False


def _training_flag_cleared(node: ast.Assign) -> list:
    """``layer`` of ``layer.training = False``: ``evaluation.training_flag_switches``."""
    if not (isinstance(node.value, ast.Constant) and node.value.value is False):
        return []
    return [path for t in node.targets if isinstance(t, ast.Attribute) and t.attr == "training"
            for path in (dotted(t.value),) if path and path != "self"]


def _eval_switch_receiver(call: ast.Call) -> Optional[str]:
    """``m`` of ``m.eval()``, ``m.train(False)``, ``m.train(mode=0)``: ``modes.mode_switch`` to eval."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("eval", "train"):
        return None
    if func.attr == "eval":
        return None if call.args or call.keywords else dotted(func.value)
    flags = train_mode_flags(call)
    if len(flags) != 1 or not isinstance(flags[0], ast.Constant):
        return None
    value = flags[0].value
    return dotted(func.value) if value is False or (type(value) is int and value == 0) else None
