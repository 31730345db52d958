"""What a rule's findings need a file to hold, declared once; both gates are read off it.

A rule that sets ``needs`` writes no gate of its own: its text gate (``Rule.gate``,
the regexes the runner's light path and ``catalogue.GATES`` read) and its tree gate
(``Rule.needs_tree``) are both computed from the one declaration, so the two cannot
disagree and no test has to keep them in step. A declaration is built from a few
shapes, each of which knows how it is spelled (the text gate: a regex every file
holding it matches) and how it is found in Python's ``ast`` (``tree_gate.TreeIndex``):

* ``Call("zero_grad")``: a call of that name, ``f(...)`` or ``x.f(...)``; ``method=True``
  for ``x.f(...)`` only, ``aliases=True`` under the names the file gives it too
  (``from torch import compile as tc``), ``discarded=True`` as a statement of its own;
* ``Defines("training_step")``: a function of that name, at any depth;
* ``LoopOver(is_loader_name)`` / ``LoopBinds(is_state_name)``: a loop over, or binding,
  a name the predicate accepts (the model's own name readers, from ``vocab``);
* ``ImportTimeCall("numpy")``: code run at import calls one of the names or a function
  of the file;
* ``Text(regex)``: the code (docstrings blanked) matches: a marker the rule reads in
  more ways than a call (``no_grad`` as a call, a decorator or an import);
* ``ActivationReachesLoss("cross_entropy", SOFTMAX)``: a softmax's (sigmoid's) output may
  reach such a loss;

combined with ``&`` (all) and ``|`` (any). A declaration must be sound as a gate: a
file the rule can find something in holds it (tests lint every fixture, inline
example and corpus file with the gates on and off).
"""
from torchlint.needs.shapes import (
    BACKWARD, COMPUTES_GRADIENTS, STEP, TORCH_COMPILE, TORCH_COMPILE_DISCARDED, TRAINING_STEP, TRAINS,
    ActivationReachesLoss, AllOf, AnyOf, Call, CallsItsOwn, Defines, EvaluationLoop, ImportTimeCall,
    ImportTimeForward, Indexed, LoopBinds, LoopCallsImported, LoopOver, Need, SwitchesToTraining, Text, TorchBefore,
)
from torchlint.needs.evaluation import (
    BindsThenReadsNumbersInALoop, CallsAHandWrittenForward, GeneratesInALoop, GuardsABackward, HandsAModelToAnImport,
    HeldOutDataInALoop, InferenceWithoutBackward, ReadsNumbersOffAForward, SamplesWithRawParameters, ServesAfterEval,
    SwitchesToEvalAndRuns,
)
from torchlint.needs.leaves import (
    ForwardWritesSelfParameter, ImportTimeCodeWrites, ImportTimeLeafWrite, LeafHandedToAProjectWriter,
)
from torchlint.needs.values import (
    ForwardAddsToSelf, ParametersHandedToAWalker, RequiresGradForcedOnAResult, ResultUsedAsObject,
    StoresInAnIteration, TensorKeptOnContext,
)

__all__ = [
    "BACKWARD", "COMPUTES_GRADIENTS", "STEP", "TORCH_COMPILE", "TORCH_COMPILE_DISCARDED", "TRAINING_STEP", "TRAINS",
    "ActivationReachesLoss", "AllOf", "AnyOf", "BindsThenReadsNumbersInALoop", "Call", "CallsAHandWrittenForward",
    "CallsItsOwn", "Defines", "EvaluationLoop", "ForwardAddsToSelf", "ForwardWritesSelfParameter", "GeneratesInALoop",
    "GuardsABackward", "HandsAModelToAnImport", "HeldOutDataInALoop", "ImportTimeCall", "ImportTimeCodeWrites",
    "ImportTimeForward", "ImportTimeLeafWrite", "Indexed", "InferenceWithoutBackward", "LeafHandedToAProjectWriter",
    "LoopBinds", "LoopCallsImported", "LoopOver", "Need", "ParametersHandedToAWalker", "ReadsNumbersOffAForward",
    "RequiresGradForcedOnAResult", "ResultUsedAsObject", "SamplesWithRawParameters", "ServesAfterEval",
    "StoresInAnIteration", "SwitchesToEvalAndRuns", "SwitchesToTraining", "TensorKeptOnContext", "Text",
    "TorchBefore",
]
