"""The rule catalogue: one module per rule, registered here in code order."""
from __future__ import annotations

from torchlint.rules.tl101_eval_without_no_grad import EvalWithoutNoGrad
from torchlint.rules.tl201_missing_zero_grad import MissingZeroGrad
from torchlint.rules.tl202_zero_grad_before_step import ZeroGradBeforeStep
from torchlint.rules.tl301_stored_loss import StoredLoss
from torchlint.rules.tl302_retain_graph_in_loop import RetainGraphInLoop
from torchlint.rules.tl401_inplace_on_leaf import InplaceOnLeaf

ALL_RULES = (
    EvalWithoutNoGrad,
    MissingZeroGrad,
    ZeroGradBeforeStep,
    StoredLoss,
    RetainGraphInLoop,
    InplaceOnLeaf,
)
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
DEFAULT_CODES = frozenset(rule.code for rule in ALL_RULES if rule.default)
