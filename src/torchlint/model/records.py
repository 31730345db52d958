"""The records the model builder collects in its single pass.

``order`` is a counter that grows in source order over the whole file, so
"textually inside X" is "order within X's [start, end)", for loops, functions
and nested definitions alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model.grad import GradMode


class Unsettled:
    """An answer that stands for no value: what ``FileModel.derived`` hands a request made while
    the same answer is being worked out (a call cycle's ``while_computing``), when that is one
    of these. An analysis whose own answer is unsettled read it off a cycle still being worked
    out: the memo does not keep it, and works it out again when next asked."""


@dataclass(eq=False)
class Scope:
    """The module, or one function or method (classes are not scopes here)."""

    node: Union[cst.Module, cst.FunctionDef]
    name: str
    parent: Optional["Scope"]
    class_name: Optional[str] = None
    params: Tuple[str, ...] = ()
    decorator_grad: Optional[GradMode] = None
    def_grad: Optional[GradMode] = None  # lexical mode where the def stands
    start: int = 0
    end: int = 0
    calls: List["CallSite"] = field(default_factory=list)
    assignments: List["Assignment"] = field(default_factory=list)
    returns: List[Tuple["Site", cst.BaseExpression]] = field(default_factory=list)
    loops: List["Loop"] = field(default_factory=list)
    grad_switches: List[Tuple[int, GradMode]] = field(default_factory=list)
    global_names: Set[str] = field(default_factory=set)  # what its ``global`` statements declare

    @property
    def is_module(self) -> bool:
        return self.parent is None

    def contains(self, order: int) -> bool:
        return self.start <= order < self.end


@dataclass(eq=False)
class Loop:
    node: Union[cst.For, cst.While]
    scope: Scope
    parent: Optional["Loop"]
    start: int
    end: int = 0
    iter: Optional[cst.BaseExpression] = None
    targets: tuple = ()

    def contains(self, order: int) -> bool:
        return self.start <= order < self.end


@dataclass(eq=False)
class Site:
    """Where a call or assignment stands: scope, loop, lexical grad mode, block."""

    scope: Scope
    loop: Optional[Loop]
    order: int
    grad: Optional[GradMode]  # innermost with/decorator mode, None if none
    block: int  # id of the statement list holding the statement
    index: int  # position of the statement in that list
    stmt: cst.CSTNode


@dataclass(eq=False)
class CallSite:
    node: cst.Call
    site: Site
    callee: Optional[str]  # "self.model.module" for a dotted callee
    method: Optional[str]  # last name of the callee: "backward", "step"
    receiver: Optional[str]  # dotted receiver of a method call: "self.optimizer"
    # The site's, which never changes: read by most questions, where a property's call costs
    # more than the answer (600,000 reads in a lint of the training corpus).
    order: int = field(init=False, repr=False)
    scope: Scope = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.order = self.site.order
        self.scope = self.site.scope


@dataclass(eq=False)
class Assignment:
    """``kind`` is assign, aug (with ``op``), for (loop target), with (as-name) or del."""

    node: cst.CSTNode
    site: Site
    kind: str
    targets: tuple  # target expressions
    value: Optional[cst.BaseExpression]
    op: Optional[str] = None
    order: int = field(init=False, repr=False)  # the site's, as ``CallSite.order``

    def __post_init__(self) -> None:
        self.order = self.site.order


@dataclass(frozen=True)
class Span:
    """A stretch of source order, for questions about code that is not a loop or scope."""

    start: int
    end: int


@dataclass(eq=False)
class LoopRole:
    """What one iteration of a loop does, helpers in the same module included."""

    calls: list  # every call the iteration reaches
    backward: bool  # runs backward() / manual_backward()
    steps: list  # optimizer.step() / scaler.step(opt) calls
    clears: bool  # zero_grad(), p.grad = None, p.grad.zero_()
    data: bool  # iterates a loader-like object

    @property
    def trains(self) -> bool:
        return self.backward or bool(self.steps)
