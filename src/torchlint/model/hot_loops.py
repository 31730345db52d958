"""Hot loops: the loops of a CUDA training program that run one training step per iteration.

A rule about work done "every training step" asks which loop is the step loop
and whether a statement runs on each of its iterations. A step loop is a loop
whose iteration trains (``LoopRole.trains``: a backward or an optimizer step,
same-module helpers included) while no other loop it reaches trains: in
``for epoch in ...: for x, y in loader: ...`` the inner loop is the step loop,
and a statement of the outer loop runs once per epoch; in ``for epoch in ...:
train_one_epoch(...)`` the step loop is the one inside the helper.

Only a file that moves work to CUDA has hot loops (``devices.moves_to_cuda``):
what these rules measure is the host waiting for, or copying to, a device.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Tuple

from torchlint.model.devices import moves_to_cuda
from torchlint.model.grad_flow import unconditional

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Loop, Scope
    from torchlint.model import FileModel


def step_loops(file_model: FileModel) -> Tuple[Loop, ...]:
    """The loops that run one training step per iteration, in source order."""
    return file_model.derived(_step_loops)


def _step_loops(file_model: FileModel) -> Tuple[Loop, ...]:
    loops = list(file_model.loops())
    training = [loop for loop in loops if file_model.loop_role(loop).trains]
    found = []
    for loop in training:
        ranges = file_model.reachable_ranges(loop)
        inner = (other for other in training if other is not loop
                 and any(start <= other.start < end for start, end in ranges))
        if next(inner, None) is None:
            found.append(loop)
    return tuple(sorted(found, key=lambda loop: loop.start))


def hot_loops(file_model: FileModel) -> Tuple[Loop, ...]:
    """The step loops of a file that trains on CUDA; none elsewhere."""
    loops = step_loops(file_model)
    return loops if loops and moves_to_cuda(file_model) else ()


def every_iteration(file_model: FileModel, call: CallSite, loop: Loop) -> bool:
    """Does ``call`` run on every iteration of ``loop``: inside it, and under no ``if``,
    inner loop, ``except`` handler or conditional expression there? A call under
    ``if step % 100 == 0:`` runs on some steps only, which is how logging intervals
    are written."""
    return loop.contains(call.order) and call.scope is loop.scope and unconditional(file_model, call, loop)


def per_step_functions(file_model: FileModel, loop: Loop) -> Tuple[Scope, ...]:
    """The functions of this module that every iteration of ``loop`` calls, directly or
    through one another, each call unconditional where it stands (``gradient_penalty(D,
    real, fake)`` in the step). Recursion is cut: a function is listed once."""
    found: List[Scope] = []
    todo = [call for call in file_model.calls_in(loop) if every_iteration(file_model, call, loop)]
    while todo:
        call = todo.pop()
        target = file_model.resolve(call)
        if target is None or target in found or target.contains(loop.start):
            continue
        found.append(target)
        todo.extend(c for c in file_model.calls_in(target)
                    if c.scope is target and unconditional(file_model, c, target))
    return tuple(found)
