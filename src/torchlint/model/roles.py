"""Roles from construction: names that hold models or loss criteria because of how they were made.

Real code names its network ``learner`` and its criterion ``objective``; what
it cannot hide is where they come from: ``learner = Net()`` for a ``Net`` that
is an ``nn.Module``, ``objective = nn.CrossEntropyLoss()``, a model handed to
``DataParallel`` or ``torch.compile``. These facts come first; the name
heuristics of ``vocab`` stay the fallback where no construction is visible
(a function parameter nobody in the file passes).

Names are dotted paths (``self.net``), one set for the whole file, as for
optimizers: the same spelling means the same object far more often than not.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional

import libcst as cst

from torchlint.model import vocab
from torchlint.model.expr import bound_values, dotted, positional
from torchlint.model.project import MODEL_BASES

if TYPE_CHECKING:
    from torchlint.model import FileModel

# torch.nn classes whose instances hold parameters and run a forward pass:
# what ``layer(x)`` in evaluation code records a graph for.
_NN_MODELS = frozenset(
    "Sequential ModuleList ModuleDict Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d "
    "ConvTranspose2d ConvTranspose3d LSTM GRU RNN LSTMCell GRUCell RNNCell Embedding EmbeddingBag "
    "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer "
    "TransformerDecoderLayer MultiheadAttention".split()
)
# Calls that hand back the model they are given, wrapped or moved.
_WRAPPERS = frozenset(
    "DataParallel DistributedDataParallel FullyShardedDataParallel FSDP DDP AveragedModel "
    "compile deepcopy".split()
)
_MOVES = frozenset("to cuda cpu half float double bfloat16 train eval requires_grad_ share_memory".split())
# Library functions that build a whole model.
_MODEL_FACTORIES = frozenset(("timm.create_model", "torch.hub.load"))
_MODEL_MODULES = ("torchvision.models.",)


def _is_loss_class_name(name: str) -> bool:
    return name.endswith("Loss") and name[:1].isupper()


class Roles:
    """Which dotted names the file builds models and criteria into."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self._kinds: dict = {}  # callee -> what the project says it is
        self._bound: Optional[Dict[str, List[Optional[cst.BaseExpression]]]] = None
        self.model_classes = _model_classes(file_model)
        self.models: set = set()
        self.criteria: set = set()
        # Each pass judges again only what read these sets: a decision made without a
        # lookup in them (most bindings: ``x = torch.zeros(3)``) is the same on every pass.
        self._lookups = 0  # lookups in the sets by ``builds_model`` and ``builds_criterion``
        self._settled: set = set()  # binding paths and (scope id, parameter index) decided for good
        for _ in range(3):  # a model built from a model (``net = DDP(model)``) may come first
            before = (len(self.models), len(self.criteria))
            self._bind_assignments()
            self._bind_parameters()
            if (len(self.models), len(self.criteria)) == before:
                break

    # -- what an expression builds -------------------------------------
    def builds_model(self, node: Optional[cst.BaseExpression]) -> bool:
        if not isinstance(node, cst.Call):
            if node is None:
                return False
            self._lookups += 1
            return dotted(node) in self.models
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _MOVES:
            return self.builds_model(node.func.value)  # ``Net().to(device)``: the callee is no dotted name
        callee = dotted(node.func)
        if callee is None:
            return False
        last = vocab.last_name(callee)
        if last in _WRAPPERS:
            return self.builds_model(positional(node, 0))
        if last == "from_pretrained":
            owner = vocab.last_name(callee.rsplit(".", 1)[0]) if "." in callee else ""
            return owner.startswith("AutoModel") or owner.endswith("Model") or "For" in owner
        if callee in self.model_classes:
            return True
        if self._project_kind(callee) == "model":
            return True
        qualified = self.file_model.names.qualify_any(callee) or ""
        if qualified in _MODEL_FACTORIES or qualified.startswith(_MODEL_MODULES):
            return qualified.rsplit(".", 1)[-1][:1].islower() or qualified in _MODEL_FACTORIES
        return qualified.startswith("torch.nn.") and last in _NN_MODELS

    def builds_criterion(self, node: Optional[cst.BaseExpression]) -> bool:
        if not isinstance(node, cst.Call):
            if node is None:
                return False
            self._lookups += 1
            return dotted(node) in self.criteria
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _MOVES:
            return self.builds_criterion(node.func.value)  # ``nn.MSELoss().to(device)``
        callee = dotted(node.func)
        if callee is None:
            return False
        last = vocab.last_name(callee)
        qualified = self.file_model.names.qualify(callee) or ""
        if qualified.startswith("torch.nn.") and _is_loss_class_name(last):
            return True
        if callee in self.file_model.class_bases:
            return _is_loss_class_name(callee) and callee in self.model_classes
        return not qualified and self._project_kind(callee) == "loss" and last[:1].isupper()

    def is_project_loss_function(self, callee: str) -> bool:
        """``focal_loss(out, y)`` for a function of the project that returns a torch loss."""
        return not callee[:1].isupper() and self._project_kind(callee) == "loss"

    def _project_kind(self, callee: str) -> Optional[str]:
        """What a name imported from the project's own modules is: ``Learner`` of
        ``from models import Learner``, ``models.Learner`` of ``import models``."""
        if callee in self._kinds:
            return self._kinds[callee]
        kind = None
        project = self.file_model.project
        head, _, rest = callee.partition(".")
        origin = self.file_model.names.origins.get(head)
        if project is not None and origin is not None and "." not in rest:
            module, name, level = origin
            if not rest and name is not None:
                kind = project.kind_of(module, level, name)
            elif rest:  # ``head`` is a module: ``import models`` or ``from . import models``
                path = module if name is None else ".".join(p for p in (module, name) if p)
                kind = project.kind_of(path, level, rest)
        self._kinds[callee] = kind
        return kind

    # -- binding -------------------------------------------------------
    def _bind_assignments(self) -> None:
        """A name holds a model (criterion) when every binding of it in the file builds one:
        ``attention = Attention(...)`` rebound by ``..., attention = translate(...)`` is not."""
        for path, values in self._bindings.items():
            if path in self._settled:
                continue
            lookups = self._lookups
            if all(value is not None and self.builds_criterion(value) for value in values):
                self.criteria.add(path)
            elif all(value is not None and self.builds_model(value) for value in values):
                self.models.add(path)
            if self._lookups == lookups:
                self._settled.add(path)

    @property
    def _bindings(self) -> Dict[str, List[Optional[cst.BaseExpression]]]:
        """Every dotted name bound in the file -> the values bound (None: not a plain assignment)."""
        bound = self._bound
        if bound is None:
            bound = self._bound = {}
            for a in self.file_model.assignments:
                for target in a.targets:
                    for path, value in bound_values(target, a.value if a.kind == "assign" else None):
                        if a.kind != "del":
                            bound.setdefault(path, []).append(value)
        return bound

    def bound_variable(self, path: str) -> bool:
        """Is ``path`` assigned in the file (``G_AB = Generator()``): a variable, whatever its case?"""
        return path in self._bindings

    def instance_classes(self, path: str) -> FrozenSet[str]:
        """The classes of this file the bindings of ``path`` build (``agent = Agent(...)``,
        ``Agent(...).to(device)``, then ``agent = agent.cuda()``; a notebook may rebind it to a
        second class), or none: bound to anything else once, we cannot tell."""
        found = set()
        for value in self._bindings.get(path, [None]):
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value in _MOVES:
                value = value.func.value
            if value is not None and dotted(value) == path:
                continue  # ``model = model.cuda()`` moves what it was: the class stays
            callee = dotted(value.func) if isinstance(value, cst.Call) else None
            if callee is None or callee not in self.file_model.class_bases:
                return frozenset()
            found.add(callee)
        return frozenset(found)

    def _bind_parameters(self) -> None:
        """A parameter every visible caller in the file passes a model (or criterion) to
        holds one: ``evaluate(net, loader)`` makes ``evaluate``'s first parameter a model."""
        for scope, calls in self.file_model.callers.items():
            for index, param in enumerate(p for p in scope.params if p not in ("self", "cls")):
                key = (id(scope), index)
                if key in self._settled:
                    continue
                passed = [_argument(call.node, index, param) for call in calls]
                lookups = self._lookups
                if not passed or any(arg is None for arg in passed):
                    pass
                elif all(self.builds_criterion(arg) for arg in passed):
                    self.criteria.add(param)
                elif all(self.builds_model(arg) for arg in passed):
                    self.models.add(param)
                if self._lookups == lookups:
                    self._settled.add(key)


def _argument(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    if any(arg.star for arg in call.args[: index + 1]):
        return None
    return positional(call, index)


def _model_classes(file_model: FileModel) -> frozenset:
    """Classes of this file whose bases reach a module class, through the file's own classes."""
    bases = file_model.class_bases
    found: set = set()
    changed = True
    while changed:
        changed = False
        for cls, cls_bases in bases.items():
            if cls in found:
                continue
            if any(vocab.last_name(b) in MODEL_BASES or b in found for b in cls_bases):
                found.add(cls)
                changed = True
    return frozenset(found)
