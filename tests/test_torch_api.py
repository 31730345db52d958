"""The removed/deprecated/private torch API lists (model/torch_api.py) hold on the installed torch.

Every entry names its source; a source in the torch package must be a line
that says what the entry claims. Each removed function must raise, each
removed tensor method must be gone, each removed keyword must be refused
(TypeError) by every callable it names, each deprecated function or keyword
that ``warns`` must warn when called on CPU, each private name must be its
public twin, and every exact replacement must exist and take the same
parameters.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import warnings
from pathlib import Path

import pytest

from torchlint.model.torch_api import (DEPRECATED, DEPRECATED_KEYWORDS, NON_PUBLIC, REMOVED, REMOVED_KEYWORDS,
                                       REMOVED_METHODS)

torch = pytest.importorskip("torch")
TORCH_ROOT = Path(torch.__file__).parent.parent
ALL = {**REMOVED, **DEPRECATED, **NON_PUBLIC, **REMOVED_METHODS}
KEYWORDS = {f"{c.keyword}@{c.since[0]}.{c.since[1]}": c for c in (*REMOVED_KEYWORDS, *DEPRECATED_KEYWORDS)}
SOURCE = re.compile(r"^torch/[\w/]+\.py:(\d+)$")


def resolve(qualified: str):
    """What the dotted name means in code: attributes first (``torch.nn.utils.weight_norm`` is
    the function, not the submodule of that name), importing a submodule only when needed."""
    parts = qualified.split(".")
    value = importlib.import_module(parts[0])
    for index, name in enumerate(parts[1:], start=2):
        try:
            value = getattr(value, name)
        except AttributeError:
            value = importlib.import_module(".".join(parts[:index]))
    return value


def source_window(source: str) -> str:
    path, line = source.rsplit(":", 1)
    lines = (TORCH_ROOT / path).read_text(encoding="utf-8").splitlines()
    number = int(line)
    return "\n".join(lines[max(0, number - 7):number + 6])


def _says_where_it_comes_from(name, change, public_twin: bool = False):
    assert change.source and change.replacement, name
    assert SOURCE.match(change.source) or change.source.startswith("https://"), change.source
    if SOURCE.match(change.source):
        window = source_window(change.source)
        if public_twin:
            assert change.replacement.rsplit(".", 1)[1] in window, (name, change.source)
        else:
            assert "deprecat" in window.lower() or "removed" in window.lower(), (name, change.source)
        version = f"{change.since[0]}.{change.since[1]}"
        assert change.since_source or version in window, f"{name}: where does {version} come from?"
    else:
        assert change.since_source, f"{name}: a pull request alone does not say which release it reached"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_entry_says_where_it_comes_from(name):
    _says_where_it_comes_from(name, ALL[name], public_twin=name in NON_PUBLIC)
    successor = ALL[name].successor
    if successor is not None:
        assert successor.since > ALL[name].since and successor.source, name


@pytest.mark.parametrize("key", sorted(KEYWORDS))
def test_every_keyword_entry_says_where_it_comes_from(key):
    change = KEYWORDS[key]
    _says_where_it_comes_from(key, change)
    assert change.callables and all(name.startswith("torch.") for name in change.callables), key


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_removed_functions_raise(name):
    with pytest.raises(RuntimeError, match="is now removed"):
        resolve(name)(torch.eye(3), torch.eye(3)) if name in ("torch.solve", "torch.lstsq") \
            else resolve(name)(torch.eye(3))


@pytest.mark.parametrize("name", sorted(REMOVED_METHODS))
def test_removed_tensor_methods_are_gone(name):
    method = name.rsplit(".", 1)[1]
    assert not hasattr(torch.Tensor, method), name
    with pytest.raises(AttributeError, match=method):
        getattr(torch.ones(2, 3), method)("N", "C")


# Arguments for the builtins among the callables of a removed keyword (no Python signature to bind).
BUILTIN_ARGS = {"torch.tensor": ([1.0, 2.0],), "torch.full": ((2,), 1.0)}


def _refuses(name: str, keyword: str) -> None:
    callable_ = resolve(name)
    try:
        signature = inspect.signature(callable_)
    except ValueError:  # a C++ builtin: call it
        with pytest.raises(TypeError, match=keyword):
            callable_(*BUILTIN_ARGS.get(name, ((2,),)), **{keyword: ("N",)})
        return
    # binding fails exactly where a call would, before the callable runs, whatever else it needs
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        signature.bind_partial(**{keyword: True})


@pytest.mark.parametrize("key", sorted(f"{c.keyword}:{name}" for c in REMOVED_KEYWORDS for name in c.callables))
def test_removed_keywords_are_refused(key):
    keyword, name = key.split(":")
    _refuses(name, keyword)


@pytest.mark.parametrize("key", sorted(k for k, c in KEYWORDS.items() if c in DEPRECATED_KEYWORDS))
def test_deprecated_keywords_warn_or_were_removed_since(key):
    """A deprecated keyword warns on torch 2.13, or a later entry says it was removed and the
    callables refuse it (``verbose``: deprecated in 2.2, removed in 2.7)."""
    change = KEYWORDS[key]
    removed = [r for r in REMOVED_KEYWORDS if r.keyword == change.keyword and r.callables >= change.callables]
    if removed:
        assert removed[0].since > change.since, key
        for name in sorted(change.callables):
            _refuses(name, change.keyword)
        return
    records = _warnings_of(lambda: KEYWORD_CALLS[key]())
    assert any("deprecated" in str(r.message) and change.keyword in str(r.message) for r in records), \
        (key, [str(r.message) for r in records])


@contextlib.contextmanager
def _process_group():
    """A one-process gloo group on CPU: enough for a collective or a DDP wrapper to run."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield dist
    finally:
        dist.destroy_process_group()


def _ddp_with_broadcast_buffers():
    with _process_group():
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2), broadcast_buffers=False)


KEYWORD_CALLS = {"broadcast_buffers@2.13": _ddp_with_broadcast_buffers}


def _warnings_of(call) -> list:
    torch.set_warn_always(True)  # the C++ deprecations warn once per process otherwise
    try:
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            call()
    finally:
        torch.set_warn_always(False)
    return records


def _scriptable(x):
    return x.clamp(min=0.0)


def _script_method(decorate):
    class Clamp(torch.jit.ScriptModule):
        @decorate
        def forward(self, x):
            return x.clamp(min=0.0)

    return Clamp


def _collective(name):
    def call(function):
        with _process_group():
            function(torch.zeros(2), torch.ones(2))
    return call


with warnings.catch_warnings():  # built once, outside the recorded calls: their own warnings are not evidence
    warnings.simplefilter("ignore")
    _SCRIPTED = torch.jit.script(torch.nn.Linear(2, 2))
    _SAVED = io.BytesIO()
    torch.jit.save(_SCRIPTED, _SAVED)

A, V = torch.eye(3) * 2, torch.ones(3)
# One CPU call of each deprecated function (``warns`` entries only).
CALLS = {
    "torch.cuda.amp.autocast": lambda f: f(enabled=False),
    "torch.cpu.amp.autocast": lambda f: f(enabled=False),
    "torch.cuda.amp.GradScaler": lambda f: f(enabled=False),
    "torch.cpu.amp.GradScaler": lambda f: f(enabled=False),
    "torch.cuda.amp.custom_fwd": lambda f: f(lambda ctx, x: x),
    "torch.cuda.amp.custom_bwd": lambda f: f(lambda ctx, x: x),
    "torch.testing.assert_allclose": lambda f: f(V, V),
    "torch.nn.utils.weight_norm": lambda f: f(torch.nn.Linear(2, 2)),
    "torch.nn.utils.stateless.functional_call": lambda f: f(torch.nn.Linear(3, 3), {}, (V,)),
    "torch.set_default_tensor_type": lambda f: f(torch.FloatTensor),
    "torch.backends.cuda.sdp_kernel": lambda f: f(),
    "torch.utils._pytree._register_pytree_node": lambda f: f(type("Box", (), {}), lambda b: ([], None),
                                                            lambda values, context: None),
    "torch.nn.functional.upsample": lambda f: f(torch.ones(1, 1, 2, 2), scale_factor=2),
    "torch.nn.functional.upsample_nearest": lambda f: f(torch.ones(1, 1, 2, 2), scale_factor=2),
    "torch.nn.functional.upsample_bilinear": lambda f: f(torch.ones(1, 1, 2, 2), scale_factor=2),
    "torch.nn.utils.clip_grad_norm": lambda f: f([torch.nn.Parameter(V.clone())], 1.0),
    "torch.range": lambda f: f(0, 3),
    "torch.chain_matmul": lambda f: f(A, A, A),
    "torch.qr": lambda f: f(A),
    "torch.cholesky": lambda f: f(A),
    "torch.lu": lambda f: f(A),
    "torch.lu_solve": lambda f: f(A, *torch.linalg.lu_factor(A)),
    "torch.triangular_solve": lambda f: f(A, A),
    **{f"torch.distributed.{name}": _collective(name) for name in (
        "_all_gather_base", "_reduce_scatter_base", "all_gather_into_tensor", "reduce_scatter_tensor")},
    "torch.jit.script": lambda f: f(_scriptable),
    "torch.jit.script_method": _script_method,
    "torch.jit.trace": lambda f: f(_scriptable, torch.ones(2)),
    "torch.jit.trace_module": lambda f: f(torch.nn.Linear(2, 2), {"forward": torch.ones(1, 2)}),
    "torch.jit.save": lambda f: f(_SCRIPTED, io.BytesIO()),
    "torch.jit.load": lambda f: f(io.BytesIO(_SAVED.getvalue())),
}


@pytest.mark.parametrize("name", sorted(n for n, c in DEPRECATED.items() if c.warns))
def test_deprecated_functions_warn(name):
    function = resolve(name)
    if name.startswith("torch.nn.init."):
        shape = (3, 3, 3) if name.endswith("dirac") else (3, 3)
        extra = (0.5,) if name.endswith(("constant", "sparse")) else ()
        call = lambda f: f(torch.empty(shape), *extra)
    else:
        call = CALLS[name]
    previous_default = torch.get_default_dtype()
    try:
        records = _warnings_of(lambda: call(function))
    finally:
        torch.set_default_dtype(previous_default)
    assert any("deprecated" in str(r.message) for r in records), (name, [str(r.message) for r in records])


RENAMES = sorted({(c.name, c.rename) for c in ALL.values() if c.rename}
                 | {(c.name, c.successor.rename) for c in ALL.values() if c.successor and c.successor.rename})


@pytest.mark.parametrize("old,new", RENAMES)
def test_exact_replacements_exist(old, new):
    assert callable(resolve(new))
    try:
        before, after = inspect.signature(resolve(old)), inspect.signature(resolve(new))
    except ValueError:  # a C++ builtin: no signature to compare
        return
    # an exact rename takes the old arguments in the same places under the same names; anything
    # the new one adds comes after them, with a default (a decorator's wrapper that takes
    # *args/**kwargs says nothing either way)
    if not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in before.parameters.values()):
        names = list(before.parameters)
        assert list(after.parameters)[:len(names)] == names, (old, new)
        extra = list(after.parameters.values())[len(names):]
        assert all(p.default is not p.empty or p.kind is p.VAR_KEYWORD for p in extra), (old, new)


@pytest.mark.parametrize("name", sorted(NON_PUBLIC))
def test_private_names_are_their_public_twins(name):
    private, public = resolve(name), resolve(NON_PUBLIC[name].rename)
    if isinstance(private, type) and private is not public:
        # _LRScheduler: an empty subclass kept for old code
        assert public in private.__mro__ and not [k for k in vars(private) if not k.startswith("__")]
    else:
        assert private is public
