"""Forwards made to look at a model, not to evaluate it.

A forward whose output only reaches a plot, a saved image grid or a shape check
(``save_image(torch.cat((a.data, G(z).data)))`` every N batches,
``ax.scatter(*net_G(z).detach().numpy().T)`` once per epoch), or that a notebook runs
a handful of times (``for i in range(5): show(model(x[i]))``), records one small
graph that is freed with its output. Its waste does not grow with a dataset: a
careful reviewer calls it a nit, not an evaluation hazard. TL101 leaves these to the
opt-in TL107.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from torchlint.model.evaluation import reads_after
from torchlint.model.expr import dotted

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Loop, Scope

# Calls that draw or save what they are given: matplotlib, torchvision.utils, TensorBoard.
_SHOWN_BY = frozenset(
    "imshow imsave matshow scatter plot plot_surface hist bar save_image make_grid savefig "
    "add_image add_images add_figure add_video title set_title suptitle xlabel ylabel set_xlabel "
    "set_ylabel text annotate legend".split())
# ``show_scatterplot(Y)``, ``plot_bases(...)``, ``visualize(...)``, ``draw_boxes(...)``.
_SHOWN_BY_PREFIX = ("show", "plot", "visuali", "draw", "display")
# A look at the output's shape is display too (``print(out.shape)``, ``logits.size()``).
_SHAPE_READS = frozenset(("shape", "size", "dim", "ndim", "ndimension"))
# Python functions that turn values into text or numbers for a caption.
_TEXT_BUILTINS = frozenset(("str", "repr", "int", "float", "round", "format", "len", "abs"))
# A loop this short is a demonstration, not an evaluation over data.
FEW_ITERATIONS = 10
_FOLLOWED_NAMES = 3  # ``out = G(z)``, ``img = torch.cat((x, out))``, ``grid = make_grid(img)``


def shown_only(file_model: FileModel, call: CallSite) -> bool:
    """Does the forward's output reach nothing but plots, saved images and shape reads?"""
    return _shown(file_model, call.scope, call.node, _FOLLOWED_NAMES) is True


def _shown(file_model: FileModel, scope: Scope, node: cst.CSTNode, names_left: int) -> Optional[bool]:
    """Where the tensor ``node`` stands for goes: True when it is drawn, saved or measured,
    None when it may go anywhere else (a loss, a list, a helper, a return)."""
    parents = file_model.parents
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value in _SHAPE_READS:
                return True
            holder = parents.get(id(parent))
            if isinstance(holder, cst.Call) and holder.func is parent:
                # ``.detach()``, ``.cpu().numpy()``, ``.permute(1, 2, 0)``; a ``.backward()`` ends its
                # statement unshown, and the statement is no display.
                node = holder
            else:
                node = parent  # ``.data``, ``.T``
        elif isinstance(parent, (cst.Subscript, cst.Index, cst.SubscriptElement, cst.Slice, cst.Element,
                                 cst.Tuple, cst.List, cst.BinaryOperation, cst.UnaryOperation,
                                 cst.FormattedStringExpression, cst.FormattedString, cst.ConcatenatedString)):
            node = parent  # ``fake[:, 0]``, ``names[pred]``, ``(a, fake)``, ``f"{pred}"``
        elif isinstance(parent, cst.Arg):
            holder = parents.get(id(parent))
            if not isinstance(holder, cst.Call):
                return None
            if _draws(holder):
                return True
            if not _passes_on(file_model, holder):
                return None
            node = holder
        elif isinstance(parent, cst.Assign) and parent.value is node:
            if names_left == 0 or len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
                return None
            return reads_after(file_model, scope, parent, parent.targets[0].target.value,
                               lambda read: _shown(file_model, scope, read, names_left - 1))
        else:
            return None


def _draws(call: cst.Call) -> bool:
    name = _last_name(call.func)
    return name is not None and (name in _SHOWN_BY or name.startswith(_SHOWN_BY_PREFIX))


def _passes_on(file_model: FileModel, call: cst.Call) -> bool:
    """A call that turns its argument into another tensor or text for the caption:
    ``torch.cat``, ``torch.softmax``, ``str``, ``"{}".format``."""
    callee = dotted(call.func)
    if callee is None:
        return isinstance(call.func, cst.Attribute) and call.func.attr.value == "format"
    if callee in _TEXT_BUILTINS or callee.endswith(".format"):
        return True
    qualified = file_model.names.qualify(callee) or ""
    return qualified.startswith("torch.") and not qualified.startswith(
        ("torch.autograd", "torch.distributions", "torch.save"))


def _last_name(func: cst.BaseExpression) -> Optional[str]:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


def runs_a_few_times(file_model: FileModel, call: CallSite) -> bool:
    """A forward at the top of a script or notebook inside loops that each run at most
    ``FEW_ITERATIONS`` times (``for s in range(1, 6)``, ``for i in range(num_to_plot)``
    after ``num_to_plot = 5``): a demonstration, not an evaluation over a dataset."""
    loop: Optional[Loop] = call.site.loop
    if loop is None or not call.scope.is_module:
        return False
    while loop is not None:
        if not _few_iterations(call.scope, loop):
            return False
        loop = loop.parent
    return True


def _few_iterations(scope: Scope, loop: Loop) -> bool:
    if not isinstance(loop.node, cst.For) or not isinstance(loop.iter, cst.Call) \
            or dotted(loop.iter.func) != "range" or not 1 <= len(loop.iter.args) <= 2:
        return False
    bounds = [_small_int(scope, arg.value) for arg in loop.iter.args]
    if any(b is None for b in bounds):
        return False
    start, stop = (0, bounds[0]) if len(bounds) == 1 else bounds
    return stop - start <= FEW_ITERATIONS  # type: ignore[operator]


def _small_int(scope: Scope, expr: cst.BaseExpression) -> Optional[int]:
    """An integer literal, or a name the scope binds once, to an integer literal."""
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    if not isinstance(expr, cst.Name):
        return None
    values = [a.value for a in scope.assignments
              if any(isinstance(t, cst.Name) and t.value == expr.value for t in a.targets)]
    if len(values) != 1 or not isinstance(values[0], cst.Integer):
        return None
    return int(values[0].value)
