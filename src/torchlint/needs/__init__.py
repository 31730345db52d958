"""What a rule's findings need a file to hold, declared once; both gates are read off it.

Every rule sets ``needs`` and writes no gate of its own (``Rule`` refuses one that does):
its text gate (``Rule.gate``, the regexes the runner's light path and ``catalogue.GATES``
read) and its tree gate (``Rule.needs_tree``) are both computed from the one
declaration, so the two cannot disagree and no test has to keep them in step. A
declaration is built from shapes, each of which knows how it is spelled (the text gate:
regexes every file holding it matches, none when the text cannot tell) and how it is
found in Python's ``ast`` (``tree_gate.TreeIndex``).

``shapes.py``, what code looks like:

* ``Call("zero_grad")``: a call of that name, ``f(...)`` or ``x.f(...)``; ``method=True``
  for ``x.f(...)`` only, ``aliases=True`` under the names the file gives it too
  (``from torch import compile as tc``), ``discarded=True`` as a statement of its own,
  ``passes=("weights_only", False)`` / ``omits="weights_only"`` for a keyword;
* ``Defines("training_step")``: a function of that name, at any depth;
* ``LoopOver(is_loader_name)`` / ``LoopBinds(is_state_name)``: a loop over, or binding,
  a name the predicate accepts (the model's own name readers, from ``vocab``);
* ``ImportTimeCall("numpy")``, ``ImportTimeForward(is_eval_data_name)``: code run at
  import calls one of the names (or a function of the file), or a forward over such data;
* ``EvaluationLoop()``, ``CallsItsOwn(is_eval_function_name)``, ``SwitchesToTraining()``;
* ``TorchBefore((2, 6))``: the project's target torch is older;
* ``Text(regex)``: the code (docstrings blanked) matches: a marker the rule reads in
  more ways than a call (``no_grad`` as a call, a decorator or an import);
* ``ActivationReachesLoss("cross_entropy", SOFTMAX)``: a softmax's (sigmoid's) output may
  reach such a loss;

``values.py``, ``leaves.py`` and ``evaluation.py``, questions that follow values through a
scope the way a fact of the model does on libcst's tree (what a load's result is used
as, a tensor kept on ``ctx``, a write to a leaf, a forward over held-out data), each
named for what it finds;

combined with ``&`` (all) and ``|`` (any). A declaration must be sound as a gate: a
file the rule can find something in holds it (tests lint every fixture, inline
example and corpus file with the gates on and off).
"""
from torchlint.needs.shapes import (
    BACKWARD, COMPUTES_GRADIENTS, STEP, TORCH_COMPILE, TORCH_COMPILE_DISCARDED, TRAINING_STEP, TRAINS,
    ActivationReachesLoss, AllOf, AnyOf, Call, CallsItsOwn, Defines, EvaluationLoop, ImportTimeCall,
    ImportTimeForward, Indexed, LoopBinds, LoopCallsImported, LoopOver, Need, SwitchesToTraining, Text, TorchBefore,
    Unspelled,
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
    "TorchBefore", "Unspelled",
]
