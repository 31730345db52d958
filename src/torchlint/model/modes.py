"""Train/eval mode of modules: where code calls ``.eval()`` / ``.train(...)`` on a model.

Grad mode (``grad.py``) says whether autograd records; module mode says
whether dropout and batch-norm behave as in training. The two are set
separately and forgetting either is a classic bug, so rules about module
mode share these readers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from torchlint.model.expr import dotted, keyword, literal_bool, positional, referenced_paths
from torchlint.model.records import CallSite
from torchlint.model.vocab import called_module, last_name, tokens

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Scope

# Words of helpers that switch modes for a caller: monai's ``eval_mode(model)``,
# ``set_bn_eval``, ``model_eval(model)``, ``with evaluating(model)``, ``switch_to_train(model)``.
EVAL_WORDS = frozenset(("eval", "evaluation", "evaluating", "inference"))
TRAIN_WORDS = frozenset(("train", "training"))


@dataclass(frozen=True)
class ModeSwitch:
    call: CallSite
    receiver: str
    to_eval: Optional[bool]  # True: eval(), False: train(), None: train(flag) we cannot read

    @property
    def order(self) -> int:
        return self.call.order


def mode_switch(call: CallSite) -> Optional[ModeSwitch]:
    """``m.eval()``, ``m.train()``, ``m.train(False)``, ``m.train(mode=flag)``; else None."""
    if call.receiver is None or call.method not in ("eval", "train"):
        return None
    if call.method == "eval":
        if call.node.args:  # tensorflow's tensor.eval(feed_dict=...), not nn.Module.eval()
            return None
        return ModeSwitch(call, call.receiver, True)
    if len(call.node.args) > 1:
        return None
    flag = positional(call.node, 0) or keyword(call.node, "mode")
    if flag is None:
        return ModeSwitch(call, call.receiver, False)
    value = literal_bool(flag)
    return ModeSwitch(call, call.receiver, None if value is None else not value)


def mode_switches(file_model: FileModel, calls: Iterable[CallSite]) -> list:
    """The switches among ``calls``. ``self.eval()`` that runs a method of this module is
    none (an evaluation loop named ``eval``), unless that method overrides nn.Module's."""
    found = []
    for switch in map(mode_switch, calls):
        if switch is None:
            continue
        method = file_model.resolve(switch.call)
        if method is None or overrides_mode_switch(method):
            found.append(switch)
    return found


def overrides_mode_switch(scope: Scope) -> bool:
    """``def train(self, mode=True): super().train(mode); self.backbone.eval()``: nn.Module's
    own switch, extended (to keep frozen batch-norm in eval mode), not a training loop."""
    if scope.class_name is None or scope.name not in ("train", "eval"):
        return False
    return "mode" in scope.params or any(_calls_super(call, scope.name) for call in scope.calls)


def _calls_super(call: CallSite, name: str) -> bool:
    func = call.node.func
    return (call.method == name and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call)
            and dotted(func.value.func) == "super")


def model_key(path: str) -> str:
    """What names one model across wrappers: ``self.model.module`` and ``model`` -> ``model``."""
    return last_name(called_module(path))


def same_model(a: str, b: str) -> bool:
    """Do two paths likely name the same module? ``self`` is taken to hold every submodule."""
    if a == "self" or b == "self":
        return a.startswith("self") and b.startswith("self")
    return model_key(a) == model_key(b) or a.startswith(b + ".") or b.startswith(a + ".")


def is_mode_helper(call: CallSite, words: frozenset) -> bool:
    """A call named with ``words`` that may switch a model's mode for the caller:
    ``eval_mode(model)``, ``model.apply(set_bn_eval)``, ``switch_to_train(model)``."""
    name = call.method or ""
    if name not in ("eval", "train") and not words.isdisjoint(tokens(name)):
        return True
    if name == "apply":
        return any(not words.isdisjoint(tokens(last_name(p))) for a in call.node.args
                   for p in referenced_paths(a.value))
    return False


def passes_model(call: CallSite, target: str) -> bool:
    """Is ``target`` (or its wrapper) handed to the call as an argument?"""
    for arg in call.node.args:
        path = dotted(arg.value)
        if path is not None and same_model(path, target):
            return True
    return False


def switched_back_through_a_helper(file_model: FileModel, calls: Iterable[CallSite], switch: ModeSwitch,
                                   target: str) -> bool:
    """Is ``switch`` (a ``train()`` in a same-module helper, ``def set_train(m): m.train()``)
    made on ``target`` by one of ``calls`` handing it over (``set_train(net)``)? The helper
    names the model by its parameter, not by the caller's name."""
    scope = switch.call.scope
    root, _, rest = switch.receiver.partition(".")
    if scope.is_module or root not in scope.params:
        return False
    index = scope.params.index(root)
    for call in calls:
        if file_model.resolve(call) is not scope:
            continue
        offset = 1 if scope.class_name is not None and call.receiver is not None else 0
        arg = keyword(call.node, root) or positional(call.node, index - offset)
        path = dotted(arg) if arg is not None else None
        if path is not None and same_model(f"{path}.{rest}" if rest else path, target):
            return True
    return False


def frozen_model(file_model: FileModel, target: str) -> bool:
    """Are ``target``'s parameters frozen (``target.requires_grad_(False)``, or
    ``p.requires_grad = False`` for every ``p`` of ``target.parameters()``)? A frozen
    backbone is kept in eval mode on purpose while the layers on top of it train."""
    return file_model.derived(_frozen_model, target)


def _frozen_model(file_model: FileModel, target: str) -> bool:
    def covers(path: Optional[str]) -> bool:
        return path is not None and (model_key(path) == model_key(target) or target.startswith(path + "."))

    for call in file_model.calls:
        if call.method == "requires_grad_" and call.node.args and literal_bool(call.node.args[0].value) is False:
            if covers(call.receiver):
                return True
    for loop in file_model.loops():
        it = loop.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)
                and it.func.attr.value in ("parameters", "named_parameters") and covers(dotted(it.func.value))):
            continue
        # Directly in the loop's body: ``if name not in (...)`` freezes only part of it.
        if any(a.site.block == id(loop.node.body) and a.kind == "assign" and literal_bool(a.value) is False
               and any(isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" for t in a.targets)
               for a in file_model.assignments):
            return True
    return False


def calls_in_node(file_model: FileModel, node: cst.CSTNode) -> list:
    """The model's CallSites for every call inside ``node`` (an expression or statement)."""
    from torchlint.model.walk import walk

    found = []

    def enter(n: cst.CSTNode) -> None:
        if type(n) is cst.Call:
            site = file_model.call_of(n)
            if site is not None:
                found.append(site)

    walk(node, enter, lambda n: None)
    return found
