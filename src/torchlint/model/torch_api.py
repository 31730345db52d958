"""Torch functions that were removed, deprecated, or are private twins of public ones.

Data for the opt-in TL701-TL703 rules. Every entry says where its claim comes
from: a file and line of the torch 2.13.0 source (paths relative to the
installed ``torch`` package, where the function raises, warns, or its docs
say it is deprecated) or a PyTorch pull request or release page. The lists
were read off PyTorch itself (``grep`` for ``deprecated`` and ``is now
removed`` in the installed package, each call then run on torch 2.13 CPU to
see the warning or error), not off another linter's tables.
``tests/test_torch_api.py`` checks every source line and every warning.

``rename`` marks an exact rewrite: the call with the same arguments under the
new name does the same thing. Where the replacement takes its arguments in
another order, returns something else, or differs in a default, there is no
``rename``: the rule reports without a fix, or a rule module builds a
narrower exact fix itself (``fix`` names it).

Not every change is a function: a keyword argument torch took away from some
callables (``verbose`` of the learning-rate schedulers, ``names`` of the
tensor factories) is a ``KeywordChange``, and a tensor method that is gone
(``Tensor.refine_names``) is an ``ApiChange`` of a methods table, found by the
method's name on any receiver but a module. Where the advice itself moved on
(``_all_gather_base`` pointed at ``all_gather_into_tensor``, which 2.13
deprecated in turn), ``successor`` holds the newer advice and the release that
brought it; a project's target decides which one it gets.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, Optional, Set, Tuple

import libcst as cst

from torchlint.model.expr import dotted
from torchlint.model.vocab import NAMED_DIMENSION_LIBRARIES
from torchlint.torch_version import TorchVersion

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Scope


@dataclass(frozen=True)
class Successor:
    """Newer advice for an ``ApiChange``: from ``since`` on, ``replacement`` is what to write."""
    since: TorchVersion  # the release whose replacement this is (it deprecated the older advice)
    replacement: str
    source: str  # where ``since`` and the replacement come from
    rename: Optional[str] = None  # as ``ApiChange.rename``


@dataclass(frozen=True)
class ApiChange:
    name: str  # the qualified name code calls: ``torch.solve``
    replacement: str  # what to write instead, as the message says it
    since: TorchVersion  # the release that removed (TL701) or deprecated (TL702) it
    source: str  # ``torch/<file>.py:<line>`` of torch 2.13.0, or a URL
    since_source: str = ""  # where ``since`` comes from, when ``source`` does not say it
    rename: Optional[str] = None  # an exact drop-in replacement's qualified name
    fix: Optional[str] = None  # a narrower exact fix a rule builds (named by the rule module)
    warns: bool = True  # calling it on torch 2.13 CPU warns (False: only the docs say so)
    successor: Optional[Successor] = None  # newer advice, for targets at or above its release

    def at(self, target: TorchVersion) -> "ApiChange":
        """The advice for a project whose oldest torch is ``target``: the successor's once the
        target has it, so that no fix writes a name that is itself deprecated there."""
        if self.successor is None or target < self.successor.since:
            return self
        return replace(self, replacement=self.successor.replacement, rename=self.successor.rename)


@dataclass(frozen=True)
class KeywordChange:
    """A keyword argument torch removed from (TL701) or deprecated in (TL702) some callables."""
    keyword: str  # ``verbose``
    callables: FrozenSet[str]  # the qualified names of the functions and classes that took it
    replacement: str  # what to do instead, as the message says it
    since: TorchVersion  # the release that removed or deprecated it
    source: str  # ``torch/<file>.py:<line>`` of torch 2.13.0, or a URL
    since_source: str = ""  # where ``since`` comes from, when ``source`` does not say it
    drop: bool = False  # leaving the argument out is the exact fix


def _table(*changes: ApiChange) -> Dict[str, ApiChange]:
    return {change.name: change for change in changes}


_LINALG_REMOVAL = (
    "removed in 1.12 by https://github.com/pytorch/pytorch/pull/70986 and its siblings (the "
    "stubs' comment: 'This nice error message can be removed in version 1.13+')"
)

# Calling one raises RuntimeError on torch 2.13 (stubs kept to explain the move).
REMOVED = _table(
    ApiChange("torch.solve", "torch.linalg.solve(A, B) (arguments reversed; returns only the solution)",
              (1, 12), "torch/_linalg_utils.py:82", _LINALG_REMOVAL),
    ApiChange("torch.lstsq", "torch.linalg.lstsq(A, B).solution (arguments reversed)",
              (1, 12), "torch/_linalg_utils.py:94", _LINALG_REMOVAL),
    ApiChange("torch.symeig", "torch.linalg.eigh(A) or torch.linalg.eigvalsh(A) (default triangle is now the lower)",
              (1, 12), "torch/_linalg_utils.py:119", _LINALG_REMOVAL),
    ApiChange("torch.eig", "torch.linalg.eig(A) or torch.linalg.eigvals(A) (complex results)",
              (1, 12), "torch/_linalg_utils.py:140", _LINALG_REMOVAL),
    ApiChange("torch.matrix_rank", "torch.linalg.matrix_rank(A) ('symmetric' is now 'hermitian')",
              (1, 12), "torch/_linalg_utils.py:74", _LINALG_REMOVAL, fix="matrix_rank"),
)

_LINALG_1_9 = "deprecated in 1.9: https://github.com/pytorch/pytorch/pull/57735 (the same stack deprecated qr and cholesky)"
_LINALG_1_13 = "deprecated in 1.13: https://github.com/pytorch/pytorch/pull/77636 and /77637 ('Version 1.13.0')"
_AMP_2_4 = ("deprecated in 2.4 (the FutureWarning first reported on torch 2.4.0: "
            "https://github.com/mit-han-lab/efficientvit/issues/127)")
_OLD = "deprecated before 1.0; the release was not established, so any supported target gets the advice"
_SINGLE_2_13 = ("deprecated in 2.13 by https://github.com/pytorch/pytorch/pull/186123 and its stack (#186124 moved "
                "torch's own callers to the _single names); first warned on torch 2.13.0: "
                "https://github.com/huggingface/accelerate/issues/4269")
_ALL_GATHER_SINGLE = Successor((2, 13), "torch.distributed.all_gather_single", _SINGLE_2_13,
                               rename="torch.distributed.all_gather_single")
_REDUCE_SCATTER_SINGLE = Successor((2, 13), "torch.distributed.reduce_scatter_single", _SINGLE_2_13,
                                   rename="torch.distributed.reduce_scatter_single")
_COMPILE_OR_EXPORT = "torch.compile (to speed up eager code) or torch.export (to capture a program)"
# TorchScript's docs have said "deprecated" since 2.5 (``.. deprecated:: 2.5`` in torch/jit); the
# calls themselves warn from 2.10 on. Taken as 2.10: the release whose code tells its users.
_JIT_2_10 = ("first warned on torch 2.10.0: PyTorch's release-2.10 validation log "
             "(https://github.com/pytorch/pytorch/issues/174081, script_method) and "
             "https://github.com/deepspeedai/DeepSpeed/issues/7835 (script, torch 2.10.0); trace, "
             "trace_module, save and load give the same two-branch warning (Python 3.14+ or older) on 2.13")
_INIT = "torch/nn/init.py:771"  # _make_deprecate: the warning every old nn.init name gives

# Still callable on torch 2.13, with a warning (or, where ``warns`` is False, a
# deprecation note in the docs only).
DEPRECATED = _table(
    ApiChange("torch.cuda.amp.autocast", 'torch.amp.autocast("cuda", ...)', (2, 4),
              "torch/cuda/amp/autocast_mode.py:14", _AMP_2_4, fix="amp_device"),
    ApiChange("torch.cpu.amp.autocast", 'torch.amp.autocast("cpu", ...)', (2, 4),
              "torch/cpu/amp/autocast_mode.py:13", _AMP_2_4, fix="amp_device"),
    ApiChange("torch.cuda.amp.GradScaler", 'torch.amp.GradScaler("cuda", ...)', (2, 4),
              "torch/cuda/amp/grad_scaler.py:19", _AMP_2_4, fix="amp_device"),
    ApiChange("torch.cpu.amp.GradScaler", 'torch.amp.GradScaler("cpu", ...)', (2, 4),
              "torch/cpu/amp/grad_scaler.py:16", _AMP_2_4, fix="amp_device"),
    ApiChange("torch.cuda.amp.custom_fwd", 'torch.amp.custom_fwd(..., device_type="cuda")', (2, 4),
              "torch/cuda/amp/autocast_mode.py:86", _AMP_2_4, fix="amp_decorator"),
    ApiChange("torch.cuda.amp.custom_bwd", 'torch.amp.custom_bwd(..., device_type="cuda")', (2, 4),
              "torch/cuda/amp/autocast_mode.py:101", _AMP_2_4, fix="amp_decorator"),
    ApiChange("torch.testing.assert_allclose", "torch.testing.assert_close (stricter defaults: dtypes must match)",
              (1, 12), "torch/testing/_comparison.py:1635"),
    ApiChange("torch.nn.utils.weight_norm", "torch.nn.utils.parametrizations.weight_norm (new state_dict keys)",
              (2, 1), "torch/nn/utils/weight_norm.py:33",
              "the parametrization it points to arrived in 2.1: torch/nn/utils/parametrizations.py (weight_norm)"),
    ApiChange("torch.nn.utils.stateless.functional_call", "torch.func.functional_call", (2, 0),
              "torch/nn/utils/stateless.py:160"),
    ApiChange("torch.set_default_tensor_type", "torch.set_default_dtype() and torch.set_default_device()", (2, 1),
              "torch/__init__.py:1308"),
    ApiChange("torch.backends.cuda.sdp_kernel", "torch.nn.attention.sdpa_kernel([SDPBackend...])", (2, 3),
              "torch/backends/cuda/__init__.py:672",
              "sdpa_kernel, its replacement, arrived in 2.3 (its docs: https://github.com/pytorch/pytorch/pull/121180; "
              "the FutureWarning on 2.3: https://github.com/pytorch/torchchat/pull/270)"),
    ApiChange("torch.utils._pytree._register_pytree_node", "torch.utils._pytree.register_pytree_node", (2, 2),
              "torch/utils/_pytree.py:534",
              "the public register_pytree_node arrived in 2.2: https://github.com/pytorch/pytorch/pull/112111"),
    ApiChange("torch.nn.functional.upsample", "torch.nn.functional.interpolate", (1, 0),
              "torch/nn/functional.py:4898", _OLD, rename="torch.nn.functional.interpolate"),
    ApiChange("torch.nn.functional.upsample_nearest", 'torch.nn.functional.interpolate(..., mode="nearest")', (1, 0),
              "torch/nn/functional.py:5374", _OLD),
    ApiChange("torch.nn.functional.upsample_bilinear",
              'torch.nn.functional.interpolate(..., mode="bilinear", align_corners=True)', (1, 0),
              "torch/nn/functional.py:5446", _OLD),
    ApiChange("torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad_norm_", (1, 0),
              "torch/nn/utils/clip_grad.py:236", _OLD, rename="torch.nn.utils.clip_grad_norm_"),
    *(ApiChange(f"torch.nn.init.{name}", f"torch.nn.init.{name}_", (1, 0), _INIT, _OLD,
                rename=f"torch.nn.init.{name}_")
      for name in ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                   "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse")),
    ApiChange("torch.range", "torch.arange (which excludes the end point)", (1, 0), "torch/_torch_docs.py:9410", _OLD),
    ApiChange("torch.chain_matmul", "torch.linalg.multi_dot([...])", (1, 9), "torch/functional.py:2066", _LINALG_1_9,
              fix="multi_dot"),
    ApiChange("torch.qr", "torch.linalg.qr(A) (some=False is mode='complete')", (1, 9), "torch/_torch_docs.py:8934",
              _LINALG_1_9, fix="single_argument"),
    ApiChange("torch.cholesky", "torch.linalg.cholesky(A) (upper=True is .mH of it)", (1, 9),
              "torch/_torch_docs.py:2650", _LINALG_1_9, fix="single_argument"),
    ApiChange("torch.lu", "torch.linalg.lu_factor(A)", (1, 13), "torch/functional.py:2113", _LINALG_1_13),
    ApiChange("torch.lu_solve", "torch.linalg.lu_solve(LU, pivots, B) (arguments reordered)", (1, 13),
              "torch/_torch_docs.py:6559", _LINALG_1_13, fix="lu_solve"),
    ApiChange("torch.triangular_solve", "torch.linalg.solve_triangular(A, B, upper=...) (arguments reversed)",
              (1, 11), "torch/_torch_docs.py:11679",
              "deprecated in 1.11 (its docs then: https://github.com/bayesiains/nflows/pull/57)"),
    ApiChange("torch.ger", "torch.outer", (1, 9), "torch/_torch_docs.py:4993",
              "an alias since torch.outer arrived in 1.5; the release of its docs' deprecation note was not "
              "established, so it is taken as 1.9, with the other linear-algebra renames",
              rename="torch.outer", warns=False),
    # The single-tensor collectives, renamed twice: the private names became public in 1.13,
    # and 2.13 renamed those to the ``_single`` family (each old name calls its new one with
    # the same arguments, so every step is an exact rename).
    ApiChange("torch.distributed._all_gather_base", "torch.distributed.all_gather_into_tensor", (1, 13),
              "torch/distributed/distributed_c10d.py:4418",
              "deprecated in 1.13 by https://github.com/pytorch/pytorch/pull/85686 (all_gather_into_tensor in "
              "its place)", rename="torch.distributed.all_gather_into_tensor", successor=_ALL_GATHER_SINGLE),
    ApiChange("torch.distributed._reduce_scatter_base", "torch.distributed.reduce_scatter_tensor", (1, 13),
              "torch/distributed/distributed_c10d.py:4966",
              "deprecated in 1.13 by https://github.com/pytorch/pytorch/pull/85867 (reduce_scatter_tensor in "
              "its place)", rename="torch.distributed.reduce_scatter_tensor", successor=_REDUCE_SCATTER_SINGLE),
    ApiChange("torch.distributed.all_gather_into_tensor", "torch.distributed.all_gather_single", (2, 13),
              "torch/distributed/distributed_c10d.py:4400", _SINGLE_2_13,
              rename="torch.distributed.all_gather_single"),
    ApiChange("torch.distributed.reduce_scatter_tensor", "torch.distributed.reduce_scatter_single", (2, 13),
              "torch/distributed/distributed_c10d.py:4949", _SINGLE_2_13,
              rename="torch.distributed.reduce_scatter_single"),
    # TorchScript: no drop-in replacement (torch.compile speeds up eager code, torch.export
    # captures a program to save), so no fix.
    ApiChange("torch.jit.script", _COMPILE_OR_EXPORT, (2, 10), "torch/jit/_script.py:1489", _JIT_2_10),
    ApiChange("torch.jit.script_method", _COMPILE_OR_EXPORT, (2, 10), "torch/jit/_script.py:366", _JIT_2_10),
    ApiChange("torch.jit.trace", _COMPILE_OR_EXPORT, (2, 10), "torch/jit/_trace.py:1007", _JIT_2_10),
    ApiChange("torch.jit.trace_module", _COMPILE_OR_EXPORT, (2, 10), "torch/jit/_trace.py:1146", _JIT_2_10),
    ApiChange("torch.jit.save", "torch.export.export(...) and torch.export.save", (2, 10),
              "torch/jit/_serialization.py:90", _JIT_2_10),
    ApiChange("torch.jit.load", "torch.export.load (for a program saved with torch.export.save)", (2, 10),
              "torch/jit/_serialization.py:177", _JIT_2_10),
)

_DTENSOR = ("public since 2.5: https://github.com/pytorch/pytorch/pull/133881 moved DTensor to "
            "torch.distributed.tensor and left torch/distributed/_tensor/__init__.py as a shim ('NOTICE: DTensor "
            "has moved to torch.distributed.tensor')")

# Private names whose public twin is the very same object (``default_collate``),
# or, for ``_LRScheduler``, an empty subclass of it kept for old code.
NON_PUBLIC = _table(
    ApiChange("torch.utils.data._utils.collate.default_collate", "torch.utils.data.default_collate", (1, 11),
              "torch/utils/data/__init__.py:4", "public since 1.11: https://github.com/pytorch/pytorch/pull/69862",
              rename="torch.utils.data.default_collate"),
    ApiChange("torch.utils.data._utils.collate.default_convert", "torch.utils.data.default_convert", (1, 11),
              "torch/utils/data/__init__.py:5", "public since 1.11: https://github.com/pytorch/pytorch/pull/69862",
              rename="torch.utils.data.default_convert"),
    ApiChange("torch.utils.data._utils.worker.get_worker_info", "torch.utils.data.get_worker_info", (1, 2),
              "torch/utils/data/__init__.py:6",
              "exported beside IterableDataset; the release was not established, taken as 1.2 (IterableDataset's)",
              rename="torch.utils.data.get_worker_info"),
    ApiChange("torch.distributed._tensor.DTensor", "torch.distributed.tensor.DTensor", (2, 5),
              "torch/distributed/_tensor/__init__.py:33", _DTENSOR, rename="torch.distributed.tensor.DTensor"),
    ApiChange("torch.distributed._tensor.distribute_tensor", "torch.distributed.tensor.distribute_tensor", (2, 5),
              "torch/distributed/_tensor/__init__.py:32", _DTENSOR, rename="torch.distributed.tensor.distribute_tensor"),
    ApiChange("torch.distributed._tensor.distribute_module", "torch.distributed.tensor.distribute_module", (2, 5),
              "torch/distributed/_tensor/__init__.py:31", _DTENSOR, rename="torch.distributed.tensor.distribute_module"),
    ApiChange("torch.distributed._tensor.Shard", "torch.distributed.tensor.Shard", (2, 5),
              "torch/distributed/_tensor/__init__.py:43", _DTENSOR, rename="torch.distributed.tensor.Shard"),
    ApiChange("torch.distributed._tensor.Replicate", "torch.distributed.tensor.Replicate", (2, 5),
              "torch/distributed/_tensor/__init__.py:42", _DTENSOR, rename="torch.distributed.tensor.Replicate"),
    ApiChange("torch.distributed._tensor.Partial", "torch.distributed.tensor.Partial", (2, 5),
              "torch/distributed/_tensor/__init__.py:38", _DTENSOR, rename="torch.distributed.tensor.Partial"),
    ApiChange("torch.distributed._tensor.Placement", "torch.distributed.tensor.Placement", (2, 5),
              "torch/distributed/_tensor/__init__.py:39", _DTENSOR, rename="torch.distributed.tensor.Placement"),
    ApiChange("torch.optim.lr_scheduler._LRScheduler", "torch.optim.lr_scheduler.LRScheduler", (2, 0),
              "torch/optim/lr_scheduler.py:316",
              "LRScheduler public since 2.0: https://github.com/pytorch/pytorch/pull/88503",
              rename="torch.optim.lr_scheduler.LRScheduler"),
)

_NAMED_TENSORS_REMOVED = ("named tensors (a prototype since 1.3, its docs: 'The named tensor API is a prototype "
                          "feature and subject to change') were removed in 2.13 by "
                          "https://github.com/pytorch/pytorch/pull/173895; the factories that took names= are "
                          "docs/source/named_tensor.md's list and full "
                          "(https://github.com/pytorch/pytorch/pull/23743 added names to ones, rand, randn, zeros, "
                          "full)")

# Tensor methods torch has removed: found as ``<receiver>.<method>(...)`` on any receiver that is
# not a module, since the names are the named-tensor API's own (``rename`` and ``names``, which
# other libraries share, are left out).
REMOVED_METHODS = _table(
    ApiChange("torch.Tensor.refine_names", "positional dimensions (tensor.permute, tensor.unsqueeze)", (2, 13),
              "https://github.com/pytorch/pytorch/pull/173895", _NAMED_TENSORS_REMOVED),
    ApiChange("torch.Tensor.align_to", "tensor.permute(...) by dimension index", (2, 13),
              "https://github.com/pytorch/pytorch/pull/173895", _NAMED_TENSORS_REMOVED),
    ApiChange("torch.Tensor.align_as", "tensor.permute(...)/unsqueeze(...) to the other tensor's layout", (2, 13),
              "https://github.com/pytorch/pytorch/pull/173895", _NAMED_TENSORS_REMOVED),
)

_LR_SCHEDULERS = frozenset(f"torch.optim.lr_scheduler.{name}" for name in (
    "LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
    "LinearLR", "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR", "ReduceLROnPlateau",
    "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR"))
_VERBOSE_ADVICE = "print scheduler.get_last_lr() where the learning rate should be shown"
_VERBOSE_DEPRECATED = ("deprecated in 2.2 by https://github.com/pytorch/pytorch/pull/111302 ('Deprecated verbose "
                       "parameter in LR schedulers')")

# Keyword arguments torch took away: the call raises TypeError.
REMOVED_KEYWORDS: Tuple[KeywordChange, ...] = (
    KeywordChange("verbose", _LR_SCHEDULERS, _VERBOSE_ADVICE, (2, 7),
                  "https://github.com/pytorch/pytorch/pull/147301",
                  "removed in 2.7 by that pull request (its BC-breaking note: 'print_lr and verbose ... deprecated "
                  "since release 2.2 ... Now, we complete the deprecation by removing them completely'); "
                  + _VERBOSE_DEPRECATED, drop=True),
    KeywordChange("names", frozenset(f"torch.{name}" for name in ("empty", "zeros", "ones", "full", "rand",
                                                                  "randn", "tensor")),
                  "create the tensor without names (named tensors are gone, their methods too)", (2, 13),
                  "https://github.com/pytorch/pytorch/pull/173895", _NAMED_TENSORS_REMOVED),
)

# Keyword arguments still taken, with a warning.
DEPRECATED_KEYWORDS: Tuple[KeywordChange, ...] = (
    KeywordChange("verbose", _LR_SCHEDULERS, _VERBOSE_ADVICE, (2, 2),
                  "https://github.com/pytorch/pytorch/pull/111302", _VERBOSE_DEPRECATED, drop=True),
    KeywordChange("broadcast_buffers", frozenset({"torch.nn.parallel.DistributedDataParallel",
                                                  "torch.nn.parallel.distributed.DistributedDataParallel"}),
                  "use forward_sync_buffers (which, unlike broadcast_buffers=False, still syncs buffers once at "
                  "construction)", (2, 13), "torch/nn/parallel/distributed.py:698"),
)

ALL_TABLES: Tuple[Dict[str, ApiChange], ...] = (REMOVED, DEPRECATED, NON_PUBLIC, REMOVED_METHODS)


def module_prefixes(table: Dict[str, ApiChange]) -> frozenset:
    """Every dotted module prefix of the table's names (``torch.cuda.amp`` of
    ``torch.cuda.amp.autocast``): how ``from torch.cuda import amp`` still reaches it."""
    prefixes: Set[str] = set()
    for name in table:
        parts = name.split(".")
        prefixes.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(prefixes)


def head_rebound(file_model: FileModel, written: Optional[str], scope: Optional[Scope]) -> bool:
    """The first name of ``written`` is rebound in this file (a ``def solve``, a parameter
    of ``scope``, a module-level assignment): then the import does not say what it names."""
    head = (written or "").split(".", 1)[0]
    if head in file_model.functions or (scope is not None and head in scope.params):
        return True
    return any(a.kind == "assign" and any(dotted(t) == head for t in a.targets)
               for a in file_model.module_scope.assignments)


def lookup(table: Dict[str, ApiChange], qualified: Optional[str], members: bool = False
           ) -> Tuple[Optional[ApiChange], str]:
    """The entry for ``qualified`` and what follows its name: ``("", ...)`` for the name
    itself; with ``members``, ``".from_local"`` for ``...DTensor.from_local`` too."""
    if not qualified:
        return None, ""
    if qualified in table:
        return table[qualified], ""
    if members:
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 1, -1):
            change = table.get(".".join(parts[:cut]))
            if change is not None:
                return change, "." + ".".join(parts[cut:])
    return None, ""


def api_calls(file_model: FileModel, table: Dict[str, ApiChange], members: bool = False
              ) -> Iterator[Tuple[CallSite, ApiChange, str]]:
    """``(call site, change, member)`` for every call of a function in ``table`` (or, with
    ``members``, of a member of a class in it: ``member`` is then ``".from_local"``) whose
    change applies to the file's target torch version (``since`` at or below it); the change
    carries the advice for that target (``ApiChange.at``)."""
    target = file_model.target_torch_version
    for call in file_model.calls:
        change, member = lookup(table, file_model.qualify(call), members)
        if change is None or change.since > target:
            continue
        if not head_rebound(file_model, call.callee, call.scope):
            yield call, change.at(target), member


def method_calls(file_model: FileModel, table: Dict[str, ApiChange]) -> Iterator[Tuple[CallSite, ApiChange]]:
    """``(call site, change)`` for every ``<receiver>.<method>(...)`` whose method a change of
    ``table`` (``torch.Tensor.<method>`` entries) names, at the file's target. The receiver is
    not known to be a tensor: it only must not be a module (``mylib.align_to(...)``), which an
    import would bind. A file that imports a library with methods of these names (TensorDict's
    ``refine_names``) is left alone, and so is a method the file's own classes or functions
    define: there the call is as likely theirs."""
    if file_model.names.imported_roots & NAMED_DIMENSION_LIBRARIES:
        return
    own = set(file_model.functions) | {name for _, name in file_model.methods}
    methods = {name.rsplit(".", 1)[1]: change for name, change in table.items()}
    methods = {method: change for method, change in methods.items() if method not in own}
    target = file_model.target_torch_version
    for call in file_model.calls:
        change = methods.get(call.method or "")
        if change is None or change.since > target or not isinstance(call.node.func, cst.Attribute):
            continue
        if call.callee is not None and file_model.names.qualify_any(call.callee) not in (None, change.name):
            continue
        yield call, change


def keyword_calls(file_model: FileModel, changes: Tuple[KeywordChange, ...],
                  superseded_by: Tuple[KeywordChange, ...] = ()
                  ) -> Iterator[Tuple[CallSite, KeywordChange, cst.Arg]]:
    """``(call site, change, argument)`` for every call of a callable a change names that passes
    the change's keyword, where the change applies at the file's target; a change that one of
    ``superseded_by`` also covers there (deprecated, then removed) is left to that one."""
    target = file_model.target_torch_version

    def applies(change: KeywordChange, qualified: str) -> bool:
        return change.since <= target and qualified in change.callables

    for call in file_model.calls:
        qualified = file_model.qualify(call)
        if qualified is None or head_rebound(file_model, call.callee, call.scope):
            continue
        for change in changes:
            if not applies(change, qualified) or any(
                    later.keyword == change.keyword and applies(later, qualified) for later in superseded_by):
                continue
            argument = next((a for a in call.node.args if a.keyword is not None
                             and a.keyword.value == change.keyword), None)
            if argument is not None:
                yield call, change, argument
