"""The removed/deprecated/private torch API lists (model/torch_api.py) hold on the installed torch.

Every entry names its source; a source in the torch package must be a line
that says what the entry claims. Each removed function must raise, each
deprecated one that ``warns`` must warn when called on CPU, each private
name must be its public twin, and every exact replacement must exist.
"""
from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

from torchlint.model.torch_api import DEPRECATED, NON_PUBLIC, REMOVED

torch = pytest.importorskip("torch")
TORCH_ROOT = Path(torch.__file__).parent.parent
ALL = {**REMOVED, **DEPRECATED, **NON_PUBLIC}
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


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_entry_says_where_it_comes_from(name):
    change = ALL[name]
    assert change.source and change.replacement, name
    assert SOURCE.match(change.source) or change.source.startswith("https://"), change.source
    if SOURCE.match(change.source):
        window = source_window(change.source)
        if name in NON_PUBLIC:
            assert change.replacement.rsplit(".", 1)[1] in window, (name, change.source)
        else:
            assert "deprecat" in window.lower() or "removed" in window.lower(), (name, change.source)
        version = f"{change.since[0]}.{change.since[1]}"
        assert change.since_source or version in window, f"{name}: where does {version} come from?"


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_removed_functions_raise(name):
    with pytest.raises(RuntimeError, match="is now removed"):
        resolve(name)(torch.eye(3), torch.eye(3)) if name in ("torch.solve", "torch.lstsq") \
            else resolve(name)(torch.eye(3))


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
    torch.set_warn_always(True)  # the C++ deprecations warn once per process otherwise
    try:
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            call(function)
    finally:
        torch.set_warn_always(False)
        torch.set_default_dtype(previous_default)
    assert any("deprecated" in str(r.message) for r in records), (name, [str(r.message) for r in records])


@pytest.mark.parametrize("name", sorted(c.name for c in ALL.values() if c.rename))
def test_exact_replacements_exist(name):
    assert callable(resolve(ALL[name].rename))


@pytest.mark.parametrize("name", sorted(NON_PUBLIC))
def test_private_names_are_their_public_twins(name):
    private, public = resolve(name), resolve(NON_PUBLIC[name].rename)
    if isinstance(private, type) and private is not public:
        # _LRScheduler: an empty subclass kept for old code
        assert public in private.__mro__ and not [k for k in vars(private) if not k.startswith("__")]
    else:
        assert private is public
