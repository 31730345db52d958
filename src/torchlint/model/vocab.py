"""Naming conventions of real PyTorch code and the words of torch's API, in one place.

The linter never runs code, so "is this a model?" or "is this an optimizer?"
is answered from names. Every heuristic lives here so rules stay thin and a
false positive is fixed once; so do the lists of torch functions and methods
(tensor factories, container stores) that the model, the rules and the gates
all read, so that they cannot drift apart.
"""
from __future__ import annotations

import re
import sys
from functools import lru_cache
from types import MappingProxyType
from typing import Callable, Iterable, List, Optional, Tuple, TypeVar

_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_T = TypeVar("_T")

# Words whose presence in a callee's last name marks a forward pass.
_MODEL_TOKENS = frozenset(
    "model models net network encoder decoder backbone classifier generator "
    "discriminator policy critic actor teacher student transformer detector "
    "autoencoder vae unet rnn lstm gru".split()
)
# Loader-like iterables mark a data iteration loop.
_LOADER_TOKENS = frozenset("loader loaders dataloader dl batches iterator".split())
EVAL_DATA_TOKENS = frozenset("val valid validation test eval evaluation dev holdout".split())
# Function names that mean "this evaluates or predicts".
_EVAL_FUNC_TOKENS = frozenset(
    "eval evaluate evaluation evaluating validate validation valid val test testing "
    "predict prediction predictions infer inference".split()
)
# Function names that mean "this generates from a model step by step".
_GENERATION_FUNC_TOKENS = frozenset(
    "sample sampling generate generation decode decoding translate beam greedy caption".split()
)

LOSS_FUNCTIONS = frozenset(
    "cross_entropy binary_cross_entropy binary_cross_entropy_with_logits kl_div "
    "nll_loss mse_loss l1_loss smooth_l1_loss huber_loss ctc_loss poisson_nll_loss "
    "gaussian_nll_loss cosine_embedding_loss margin_ranking_loss hinge_embedding_loss "
    "multilabel_margin_loss multilabel_soft_margin_loss multi_margin_loss "
    "soft_margin_loss triplet_margin_loss triplet_margin_with_distance_loss".split()
)

# Reductions that, called without a dim, reduce every element to one: a 0-dim tensor
# (``model/shapes.py``, for a function of the file and of another module of the project alike).
FULL_REDUCTIONS = frozenset("sum mean max min prod norm std var median nansum nanmean amax amin all any".split())
# Keywords a full reduction may take without naming a dim (``norm``'s first positional is ``p``).
REDUCTION_KEYWORDS = frozenset(("dtype", "p"))
# Methods that hand back a tensor of the same shape (0-dim stays 0-dim).
SHAPE_KEEPING_METHODS = frozenset(
    "detach clone cpu cuda to float double half abs neg sqrt exp log squeeze contiguous".split()
)
# Where a value came from visibly not torch: numpy and pandas reduce to scalars of their own.
NOT_TORCH_ROOTS = frozenset(("np", "numpy", "pd", "pandas", "math", "statistics"))


def full_reduction_arguments(name: str, first: int, positionals: int, keywords: Iterable[Optional[str]],
                             starred: bool) -> bool:
    """Does a full reduction's call give no dim: ``x.sum()``, ``x.norm(2)``, ``torch.sum(x, dtype=...)``,
    ``torch.norm(x, 2)``? ``first``: the positionals before any dim (1 for ``torch.sum(x)``, 0 for
    ``x.sum()``); ``keywords``: the names of the keywords given (None for ``**options``);
    ``starred``: a ``*args`` or ``**options`` is passed."""
    if starred or any(k not in REDUCTION_KEYWORDS for k in keywords):
        return False
    return positionals <= first + (1 if name == "norm" else 0)


def visibly_not_torch(chain: Iterable[Tuple[str, bool]], root: Optional[str]) -> bool:
    """Is a receiver visibly no tensor, by the attributes read along it (``chain``: each name and
    whether it is called, outermost first) and the name it starts from: ``df.values``,
    ``x.numpy()``, ``t.tolist()``, ``np.asarray(a)``?"""
    for attribute, called in chain:
        if attribute in ("values", "numpy") or (called and attribute == "tolist"):
            return True
    return root in NOT_TORCH_ROOTS


def numbers_and_zero_dim(values: Iterable[_T], is_number: Callable[[_T], bool],
                         zero_dim: Callable[[_T], bool]) -> bool:
    """Is every one of ``values`` (the operands of ``loss_a + 0.1 * loss_b``, or the bindings of a
    name: ``loss = 0`` then ``loss += criterion(out, y)``) a number or a 0-dim tensor, and at least
    one a tensor? ``zero_dim`` is asked of the others only, after ``is_number`` of all."""
    tensors = [v for v in values if not is_number(v)]
    return bool(tensors) and all(zero_dim(v) for v in tensors)


# The losses that apply an activation of their own, or expect one applied, by what they
# compute (``model/activations.py``): torch's functional form and its module, both qualified.
PAIRED_LOSSES = MappingProxyType({
    "torch.nn.functional.cross_entropy": "cross_entropy", "torch.nn.CrossEntropyLoss": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll", "torch.nn.NLLLoss": "nll",
    "torch.nn.functional.binary_cross_entropy": "bce", "torch.nn.BCELoss": "bce",
    "torch.nn.functional.binary_cross_entropy_with_logits": "bce_logits", "torch.nn.BCEWithLogitsLoss": "bce_logits",
})
# What a tensor went through last, by the torch function, Tensor method or nn layer that made it.
ACTIVATION_FUNCTIONS = MappingProxyType({
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax", "torch.special.softmax": "softmax",
    "torch.log_softmax": "log_softmax", "torch.nn.functional.log_softmax": "log_softmax",
    "torch.special.log_softmax": "log_softmax",
    "torch.sigmoid": "sigmoid", "torch.nn.functional.sigmoid": "sigmoid", "torch.special.expit": "sigmoid",
    "torch.nn.functional.linear": "logits",
})
ACTIVATION_METHODS = MappingProxyType({"softmax": "softmax", "log_softmax": "log_softmax", "sigmoid": "sigmoid"})
ACTIVATION_LAYERS = MappingProxyType({
    "Softmax": "softmax", "Softmax2d": "softmax", "LogSoftmax": "log_softmax", "Sigmoid": "sigmoid",
    **{name: "logits" for name in (
        "Linear LazyLinear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
        "LazyConv1d LazyConv2d LazyConv3d".split())},
})
# Layers that pass their input's activation on unchanged, as far as a loss can tell.
TRANSPARENT_LAYERS = frozenset("Dropout Dropout1d Dropout2d Dropout3d AlphaDropout Identity Flatten Unflatten".split())
# Tensor methods that move, reshape or re-type a tensor without changing what its values mean.
LAYOUT_METHODS = frozenset(
    "view reshape flatten squeeze unsqueeze permute transpose t contiguous float double half bfloat16 to cuda "
    "cpu view_as reshape_as".split()
)

# Framework hooks that their framework already runs under no_grad
# (Lightning, mmengine/mmdet, Keras-on-torch, Hugging Face Trainer).
GRAD_FREE_HOOKS = frozenset(
    "validation_step test_step predict_step val_step eval_step evaluation_step "
    "prediction_step validation_epoch_end test_epoch_end on_validation_batch_end "
    "on_test_batch_end on_predict_batch_end on_validation_epoch_end on_test_epoch_end "
    "simple_test aug_test forward_test".split()
)

# Their callers decide grad mode and own the graph (a model's forward, a
# pipeline's _forward).
FORWARD_METHODS = frozenset(("forward", "_forward", "__call__"))
# Methods a server or a user calls once per request to get predictions (TL101's serving entry points).
SERVING_METHODS = frozenset("predict predict_proba infer inference handle serve classify".split())

# Library objects whose __call__ runs inference under its own no_grad or
# inference_mode (ultralytics models, transformers pipelines, sentence encoders).
INFERENCE_WRAPPERS = frozenset(
    "YOLO RTDETR SAM FastSAM YOLOWorld YOLOE NAS pipeline SentenceTransformer CrossEncoder".split()
)

# Torch functions that make a tensor from data or a shape (``torch.zeros(3)``):
# their first argument is no tensor and their result is a new leaf.
DATA_FACTORIES = frozenset(
    "tensor as_tensor from_numpy zeros ones empty full rand randn randint randperm arange "
    "linspace logspace eye".split()
)
# Factories that copy another tensor's shape, dtype and device (``torch.zeros_like(x)``).
LIKE_FACTORIES = frozenset(
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split()
)
# Every torch function that makes a new tensor rather than computing one from its inputs.
TENSOR_FACTORIES = DATA_FACTORIES | LIKE_FACTORIES | frozenset(
    "normal Tensor FloatTensor DoubleTensor HalfTensor LongTensor".split()
)
# Factories whose result never carries an autograd graph, whatever they are given:
# not ``as_tensor(t)`` (hands back ``t`` itself) nor ``normal(mu, std)`` (differentiable).
GRAPH_FREE_FACTORIES = (DATA_FACTORIES | LIKE_FACTORIES) - {"as_tensor"}
# Factories whose floating result has torch's default dtype unless given one.
DEFAULT_DTYPE_FACTORIES = frozenset("randn rand zeros ones empty eye linspace logspace".split())
# ``Variable(x)`` / ``nn.Parameter(x)`` wrap a tensor as a (new) leaf.
LEAF_WRAPPERS = frozenset(("Variable", "Parameter"))
# Tensor methods that keep a value's identity as "the output" (a reduction, a reshape, a move).
SHAPE_METHODS = frozenset(
    "mean sum squeeze unsqueeze view reshape flatten float double half to cuda cpu contiguous "
    "view_as reshape_as abs neg exp log sigmoid softmax log_softmax permute transpose t".split()
)
# Tensor methods and attributes after which the value is a fresh tensor the caller owns, on purpose.
FRESH_METHODS = frozenset(("detach", "detach_", "clone", "data"))
# Tensor methods that hand the values to Python: a number, a list, a NumPy array.
NUMBER_READ_METHODS = frozenset(("item", "tolist", "numpy"))
# torch's gradient clips, by last name (``torch.nn.utils.clip_grad_norm_``, its old spelling, ...).
GRADIENT_CLIPS = frozenset(("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_"))
# What ends a forward's output as numbers read off it (TL101): the reads above, an index
# picked by ``argmax``/``argmin``, ``int(...)``/``float(...)`` of it.
NUMBERS_OF_AN_OUTPUT = NUMBER_READ_METHODS | frozenset(("argmax", "argmin", "int", "float"))
# ...and with a sample drawn from it (``multinomial``) or its best entries (``topk``): what a
# loop that generates, decodes or picks actions reads off each forward.
PICKS_FROM_AN_OUTPUT = NUMBERS_OF_AN_OUTPUT | frozenset(("multinomial", "topk"))
# Builtins that hand back a plain Python value (no tensor) whatever they are given: ``float(loss)``.
PLAIN_BUILTINS = frozenset("float int str bool len round".split())
# ...and those after which it carries no graph at all: fresh, a Python number or list, a
# numpy array, or forced to be a leaf of its own.
GRAPH_CUT_METHODS = FRESH_METHODS | NUMBER_READ_METHODS | frozenset(("requires_grad_",))
# Methods and attributes whose result never carries a graph: one list for a file's taint
# (``taint``, ``carry``, ``steps``) and what another module's function hands back (``function_effects``).
KILL_METHODS = frozenset(
    "item detach detach_ tolist numpy argmax argmin argsort long int bool byte short char "
    "size dim numel nelement eq ne gt lt ge le isnan isinf isfinite nonzero count_nonzero "
    "all any equal data_ptr element_size stride is_contiguous type_as_string __len__ "
    "keys __str__ __repr__ get_device multinomial bernoulli".split()
)
# ``indices`` of ``x.max(dim=1)``, ``x.topk(k)``, ``x.sort()``: integer positions, never a graph.
KILL_ATTRS = frozenset("data grad shape dtype device ndim requires_grad is_cuda is_leaf grad_fn indices".split())
KILL_TORCH = GRAPH_FREE_FACTORIES | frozenset(
    "argmax argmin argsort eq ne gt lt ge le isnan isinf isfinite nonzero count_nonzero "
    "equal numel is_tensor no_grad multinomial bernoulli searchsorted bucketize".split()
)
# Builtins that end a graph (a Python value), and those that hand on their arguments' graphs.
KILL_BUILTINS = frozenset("float int str bool len round repr format isinstance print hash id".split())
PROPAGATE_BUILTINS = frozenset("sum max min abs sorted list tuple reversed".split())
# Module methods that iterate over its parameters (``for p in model.parameters()``).
PARAMETER_ITERATORS = frozenset(("parameters", "named_parameters"))

# List and deque methods that keep a value, each with the position of the kept argument.
STORE_METHODS = MappingProxyType({"append": 0, "appendleft": 0, "extend": 0, "insert": 1})
# Wherever a value may be kept (for text gates): a store method's call, ``+=``, an item set
# (``d[k] = v``), a sum bound again (``total = total + v``).
STORE_SPELLING = r"\.(?:%s)\(|\+=|\]\s*=[^=]|=\s*[\w.]+\s*\+" % "|".join(sorted(STORE_METHODS))
# Methods that put values into any container: lists, deques, sets, dicts.
CONTAINER_METHODS = frozenset(STORE_METHODS) | frozenset(("add", "update", "setdefault"))
# Methods named as in-place writes (a trailing underscore) that change no tensor's values: on a
# leaf that requires grad they are harmless.
HARMLESS_UNDERSCORE_METHODS = frozenset("requires_grad_ share_memory_ detach_ retain_grad_ record_stream_".split())


def writes_in_place(method: str) -> bool:
    """``add_``, ``clamp_``, ``zero_``: a tensor method that writes its receiver in place."""
    return method.endswith("_") and not method.startswith("_") and method not in HARMLESS_UNDERSCORE_METHODS


# A file that imports one of them is a unit test (``unit_tests.py``), as is pytest's conftest.py.
TEST_FRAMEWORKS = frozenset(("pytest", "unittest"))


def is_pytest_conftest(path: str) -> bool:
    return path.replace("\\", "/").rsplit("/", 1)[-1].lower() == "conftest.py"


# Libraries whose objects have methods named as torch's named-tensor API (TensorDict's
# ``refine_names``, ``names``): in a file that imports one, such a call is not surely a tensor's.
NAMED_DIMENSION_LIBRARIES = frozenset({"tensordict"})

# Other deep-learning frameworks with a torch-like API (model.eval(),
# loss.backward()). A file that imports one of them and not torch is theirs.
OTHER_FRAMEWORKS = frozenset(
    "paddle tensorflow mindspore jittor oneflow mxnet megengine chainer jax flax".split()
)

# Libraries that are not torch and do not wrap it: a file that imports only these (and the
# standard library) names what it works with, and that is not torch.
NON_TORCH_LIBRARIES = frozenset(
    "numpy np pandas matplotlib tqdm scipy sklearn PIL cv2 IPython seaborn yaml requests h5py skimage "
    "gym gymnasium nltk spacy jax tensorflow keras".split()
)
# torch and the libraries around it: models, data and logging for torch code.
LIBRARIES_AROUND_TORCH = frozenset(
    "torch torchvision torchaudio torchtext tensorboard tensorboardX wandb einops timm lightning "
    "pytorch_lightning transformers datasets torchmetrics accelerate fastai google".split()
)


def is_non_torch_module(module: str) -> bool:
    """``numpy.linalg``, ``os.path``, ``paddle``: a module that is neither torch, nor around it,
    nor possibly the project's own (which may wrap torch)."""
    root = module.split(".", 1)[0]
    return root in NON_TORCH_LIBRARIES or root in OTHER_FRAMEWORKS or root in sys.stdlib_module_names


@lru_cache(maxsize=4096)
def tokens(name: str) -> tuple:
    """``netG`` -> ('net', 'g'); ``val_loader`` -> ('val', 'loader')."""
    out: List[str] = []
    for part in name.split("_"):
        out.extend(t.lower() for t in _TOKEN.findall(part))
    return tuple(out)


def token_spelling(words: Iterable[str]) -> str:
    """A regex matching wherever a name may have one of ``words`` as a token (``tokens``): a
    lower-case run after no letter, capitalised, or in capitals, with no lower-case letter
    after it (``x_val``, ``XVal``, ``X_VAL``, ``val2``; not ``interval`` or ``value``).
    More than ``tokens`` finds, never less: for text gates."""
    ordered = sorted(words, key=lambda w: (-len(w), w))
    lower = "|".join(ordered)
    upper = "|".join([w.capitalize() for w in ordered] + [w.upper() for w in ordered])
    return rf"(?<![A-Za-z])(?:{lower})(?![a-z])|(?:{upper})(?![a-z])"


# Wherever a name ``is_loader_name`` takes may be written: "loader" in any case, or a token.
LOADER_SPELLING = "[Ll]oader|LOADER|" + token_spelling(_LOADER_TOKENS - {"loader", "loaders", "dataloader"})


def called_module(path: str) -> str:
    """``model`` of ``model.module.forward``, ``model.forward``, ``model.module``: the module a
    call of ``path`` runs (a DataParallel/DDP wrapper's ``.module``, an explicit ``.forward``)."""
    while path.endswith((".forward", ".module")):
        path = path.rsplit(".", 1)[0]
    return path


def unwrapped_module(path: str) -> str:
    """``model`` of ``model.module``: the module a DataParallel/DDP wrapper holds."""
    while path.endswith(".module"):
        path = path.rsplit(".", 1)[0]
    return path


def last_name(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]


# ``build_model(cfg)`` makes a model, ``model_path`` names a file: neither runs one.
_NET_WORDS = frozenset("planet internet magnet subnet cabinet bonnet cornet hornet garnet sonnet bayonet clarinet".split())
# Verbs and prepositions: ``build_model(cfg)`` makes a model, ``flatten_model(m)``
# lists its layers, ``for_model(**d)`` builds a config. None of them runs one.
_NOT_MODEL_WORDS = frozenset(
    "build load get create make init setup prepare wrap compile export convert count print "
    "save freeze unfreeze copy clone deepcopy update register is has set to from for of with "
    "by on num apply restore instantiate construct resolve check validate flatten fuse turn "
    "clear infer run compute call fit train evaluate eval test predict prune quantize trace "
    "script patch replace remove delete add find list show log dump summarize unwrap".split()
)
# Names a model-word qualifies rather than ends: ``model_path``, ``model_entries``.
# A model name ends in a model word or in a short modifier (``netG``, ``model_ema``).
_MODEL_SUFFIXES = frozenset(
    "ema ddp dp fsdp module engine wrapped compiled raw base target orig original online "
    "shadow swa avg averaged unwrapped inner outer fp32 fp16 bf16 main old new ref".split()
)


@lru_cache(maxsize=4096)
def is_model_name(name: str) -> bool:
    toks = tuple(t.rstrip("0123456789") or t for t in tokens(name))
    if not toks or any(t in _NOT_MODEL_WORDS for t in toks):
        return False
    if not (_is_model_word(toks[-1]) or toks[-1] in _MODEL_SUFFIXES or len(toks[-1]) <= 2):
        return False
    return any(_is_model_word(t) for t in toks)


def _is_model_word(word: str) -> bool:
    if word in _MODEL_TOKENS or "model" in word:
        return True
    return len(word) > 3 and word.endswith("net") and word not in _NET_WORDS  # resnet, unet


# Optimizer classes by their last name: torch.optim's and common libraries' (apex,
# DeepSpeed, timm, bitsandbytes-style ports); anything ending in ``Optimizer`` too.
OPTIMIZER_CLASSES = frozenset(
    "SGD Adam AdamW Adamax Adagrad Adadelta RMSprop Rprop LBFGS NAdam RAdam SparseAdam ASGD "
    "Lamb LAMB Lion Adafactor FusedAdam FusedLAMB DeepSpeedCPUAdam".split()
)


# Text that every name ``is_optimizer_name`` accepts holds, for text gates: a token
# ``opt``/``opts``/``optim...`` as ``tokens`` cuts them (``Opt``, ``g_opts``, ``OPTIM``,
# ``optimizer``). ``Optional`` and ``options`` hold none. Three literal starts, so that
# the gate finds them with ``str.find`` (a case-insensitive group would scan every position).
OPTIMIZER_WORD = r"(?:opt|Opt|OPT)(?:im|IM|[sS]?(?![a-z]))"


@lru_cache(maxsize=4096)
def is_optimizer_name(name: str) -> bool:
    for tok in tokens(name):
        if tok.startswith("optim") or tok in ("opt", "opts"):
            return True
    return False


@lru_cache(maxsize=4096)
def is_loss_name(name: str) -> bool:
    toks = tokens(name)
    return any(t in ("loss", "losses", "criterion", "crit") or t.endswith("loss") for t in toks)


def calls_a_loss(callee: str) -> bool:
    """A call of this dotted callee computes a loss: a torch loss function by its last name
    (``F.cross_entropy``), or a plain loss-named function (``criterion``, ``loss_fn``; not a
    ``Loss`` class being built)."""
    last = last_name(callee)
    return last in LOSS_FUNCTIONS or (is_loss_name(last) and "." not in callee and not last[:1].isupper())


def is_loader_name(name: str) -> bool:
    toks = tokens(name)
    if toks and toks[0] in ("num", "n", "len", "count", "max", "min"):
        return False  # num_batches counts batches; it is not a loader
    return "loader" in name.lower() or any(t in _LOADER_TOKENS for t in toks)


# ``valid_lens``, ``test_idx``, ``val_mask``: about evaluation data, or valid entries, not the data.
_FLAG_WORDS = frozenset("is do use run n".split())
_NOT_DATA_TOKENS = frozenset("len lens length lengths mask masks idx ids index indices num count size".split())


@lru_cache(maxsize=4096)
def is_eval_data_name(name: str) -> bool:
    """``x_test``, ``X_val``, ``test_images``: a name for evaluation data. Not its lengths or
    masks, not a flag (``is_test``, ``use_val``), not a loader (``is_eval_loader_name``)."""
    toks = tokens(name)
    if not toks or toks[0] in _FLAG_WORDS or is_loader_name(name):
        return False
    return any(t in EVAL_DATA_TOKENS for t in toks) and not any(t in _NOT_DATA_TOKENS for t in toks)


def is_eval_loader_name(name: str) -> bool:
    toks = tokens(name)
    low = name.lower()
    evalish = any(t in EVAL_DATA_TOKENS for t in toks) or low.startswith(("val", "test", "eval"))
    return evalish and is_loader_name(name)


@lru_cache(maxsize=4096)
def is_transform_name(path: str) -> bool:
    """``self.outcome_transform``, ``input_transforms``: data transforms, not models."""
    return any(t in ("transform", "transforms") for t in tokens(last_name(path)))


def is_eval_function_name(name: str) -> bool:
    return any(t in _EVAL_FUNC_TOKENS for t in tokens(name))


def definition_spelling(words: Iterable[str]) -> str:
    """A regex matching wherever a function one of whose tokens is in ``words`` is defined
    (``def run_validation``): for text gates, more than ``tokens`` finds, never less."""
    return r"def\s+\w*(?:" + token_spelling(words) + ")"


EVAL_FUNCTION_DEF = definition_spelling(_EVAL_FUNC_TOKENS)  # where ``is_eval_function_name``'s are defined


def is_generation_function_name(name: str) -> bool:
    return any(t in _GENERATION_FUNC_TOKENS for t in tokens(name))


GENERATION_FUNCTION_DEF = definition_spelling(_GENERATION_FUNC_TOKENS)  # ``is_generation_function_name``'s


# -- train/eval mode ------------------------------------------------------------
# What ``model.eval()`` changes, read by the file's own model (``mode_effects.py``, libcst) and by
# the summaries of classes in other project modules (``function_summaries.py``, stdlib ``ast``).
# torch.nn layers whose forward never reads ``self.training``.
MODE_FREE_LAYERS = frozenset(
    "Module Sequential ModuleList ModuleDict Parameter ParameterList ParameterDict Identity "
    "Linear Bilinear LazyLinear Flatten Unflatten Conv1d Conv2d Conv3d ConvTranspose1d "
    "ConvTranspose2d ConvTranspose3d Embedding EmbeddingBag RNN LSTM GRU RNNCell LSTMCell GRUCell "
    "MultiheadAttention ReLU ReLU6 LeakyReLU PReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh "
    "Softmax Softmax2d LogSoftmax Softmin Softplus Softsign Hardtanh Hardswish Hardsigmoid "
    "Hardshrink Softshrink Tanhshrink Threshold LogSigmoid GLU MaxPool1d MaxPool2d MaxPool3d "
    "AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
    "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d LPPool2d LayerNorm GroupNorm "
    "LocalResponseNorm RMSNorm Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle "
    "PixelUnshuffle ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d "
    "ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d "
    "ReplicationPad3d CosineSimilarity PairwiseDistance".split()
)
# Layers with a ``dropout`` argument (used in training mode only), and how many
# positional arguments come before it.
_DROPOUT_ARGUMENT = {"RNN": 6, "LSTM": 5, "GRU": 5, "MultiheadAttention": 2}
_RECURRENT_LAYERS = frozenset(("RNN", "LSTM", "GRU"))
# Words of torch functions and layers that behave differently in training mode.
MODE_WORDS = ("dropout", "batch_norm", "batchnorm", "instance_norm", "instancenorm", "rrelu")
# Builtins a model's code may call without reading the mode.
MODE_FREE_BUILTINS = frozenset(
    "super range len int float bool str list tuple dict set zip enumerate isinstance getattr "
    "setattr hasattr print max min sum abs round sorted reversed map filter".split()
)
# An argument that is not a number literal (``dropout=args.dropout``), as ``layer_mode_free`` is told.
NOT_A_LITERAL = "?"


def zero_literal(text: str) -> bool:
    """``0``, ``0.0``, ``0.``: a rate that drops nothing."""
    return text.strip("0.") == "" and text != NOT_A_LITERAL


def torch_call_mode_free(qualified: str, layer_free: Callable[[str], bool]) -> bool:
    """Does a call of the torch name ``qualified`` leave the mode irrelevant? ``torch.relu`` and
    ``F.linear`` do, ``F.dropout`` does not, and a layer ``torch.nn.<Name>(...)`` asks
    ``layer_free(Name)`` (which reads the call's arguments on whichever tree holds it)."""
    last = qualified.rsplit(".", 1)[-1]
    if any(word in last.lower() for word in MODE_WORDS):
        return False
    if is_torch_nn_layer(qualified) and last[:1].isupper():
        return layer_free(last)
    return True


def is_torch_nn_layer(qualified: Optional[str]) -> bool:
    """``torch.nn.Conv2d``: a name straight under ``torch.nn`` (not ``torch.nn.functional.relu``)."""
    return qualified is not None and qualified.startswith("torch.nn.") and qualified.count(".") == 2


# A value bound to a method's local name, as ``names_submodules`` reads it from either tree: a dotted
# path (``"self.convs"``), ``(SUBSCRIPT, value)``, ``(CALL, dotted callee or None, positional
# arguments)``, ``LITERAL`` (an int or str constant), or None for anything else.
SUBSCRIPT, CALL = "[]", "()"
LITERAL = ("literal",)
# Calls that hand on the submodules they are given: ``enumerate(self.convs)``, ``zip(self.a, self.b)``.
_SUBMODULE_ITERATORS = frozenset(("enumerate", "zip", "reversed", "list", "iter"))


def names_submodules(value: object, qualify: Callable[[Optional[str]], Optional[str]]) -> bool:
    """Does ``value`` (read as above) name a class's own submodules or a torch.nn layer built on the
    spot: ``self.convs``, ``enumerate(self.convs)``, ``zip(self.a, self.b)``, ``self.layers[i]``,
    ``getattr(self, f"conv{i}")``, ``nn.MaxPool2d(k)``? ``qualify`` turns a dotted name into
    torch's qualified name (None if not torch)."""
    if isinstance(value, str):
        return value.startswith("self.")
    if not isinstance(value, tuple) or value is LITERAL:
        return False
    if value[0] == SUBSCRIPT:
        return names_submodules(value[1], qualify)
    _, callee, args = value
    if callee in _SUBMODULE_ITERATORS:
        return bool(args) and all(names_submodules(a, qualify) for a in args if a is not LITERAL)
    if callee == "getattr":
        return bool(args) and args[0] == "self"
    return is_torch_nn_layer(qualify(callee))


def layer_mode_free(name: str, argument: Callable[[str, int], Optional[str]]) -> bool:
    """Does ``torch.nn.<name>(...)`` (a call without ``*args``) give the same numbers in both
    modes? ``argument(keyword, position)`` is the text of the number literal passed there,
    ``NOT_A_LITERAL`` for another expression, None when nothing is."""
    if name not in MODE_FREE_LAYERS and not name.endswith("Loss"):
        return False
    before = _DROPOUT_ARGUMENT.get(name)
    if before is None:
        return True
    rate = argument("dropout", before)
    if rate is None or zero_literal(rate):
        return True
    if name in _RECURRENT_LAYERS:  # dropout between stacked layers only: one layer has none to drop
        layers = argument("num_layers", 2)
        return layers is None or layers == "1"
    return False
