"""Pre-0.4 autograd API still met in old code: ``Variable(x, volatile=True)``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

import libcst as cst

from torchlint.model.expr import keyword, literal_bool, positional

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite

_VARIABLE = frozenset(("torch.autograd.Variable", "torch.autograd.variable.Variable", "torch.Variable"))


def volatile_flag(file_model: FileModel, call: CallSite) -> Optional[Union[bool, str]]:
    """True/False for a literal ``volatile=``, "unknown" for an expression, None if not a Variable."""
    if call.callee is None:
        return None
    volatile = keyword(call.node, "volatile")
    if volatile is None:
        return None
    # Only torch's Variable (``Variable``, ``V`` after ``import Variable as V``, a lambda
    # handing its arguments to it): chainer's took ``volatile='on'`` and still does.
    if file_model.qualify_forwarded(call) not in _VARIABLE:
        return None
    flag = literal_bool(volatile)
    if flag is False:
        return None
    return True if flag else "unknown"


def variable_data(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The tensor a ``Variable(...)`` wraps, when the call does nothing else."""
    requires_grad = keyword(call, "requires_grad")
    if requires_grad is not None and literal_bool(requires_grad) is not False:
        return None
    if any(a.keyword is None for a in call.args[1:]):
        return None
    return positional(call, 0) or keyword(call, "data")
