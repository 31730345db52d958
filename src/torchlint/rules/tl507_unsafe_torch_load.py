"""TL507: ``torch.load`` that unpickles arbitrary objects (weights_only=False, or left out before 2.6),
or that loads a whole pickled object which torch 2.6's weights-only default refuses."""
from __future__ import annotations

from functools import partial
from typing import Iterator, Optional

import libcst as cst

from torchlint.edits import with_keyword
from torchlint.model import CallSite, FileModel
from torchlint.model.expr import dotted, keyword, literal_bool, positional
from torchlint.model.loaded_objects import pickled_object_use
from torchlint.needs import Call, ResultUsedAsObject, Text, TorchBefore
from torchlint.rule import Finding, Fix, Rule

_LOADS = frozenset({"torch.load", "torch.serialization.load"})
_SAVES = frozenset({"torch.save", "torch.serialization.save"})
# torch.load grew ``weights_only`` in 1.13; its default became True in 2.6.
_WEIGHTS_ONLY_SINCE = (1, 13)
_SAFE_DEFAULT_SINCE = (2, 6)
# ``torch.load`` however the file names it (``from torch import load as tl``, ``T.load``)
_load = partial(Call, "load", aliases=True)

_EXPLICIT_MESSAGE = (
    "torch.load(..., weights_only=False) unpickles arbitrary objects, so loading an untrusted file runs "
    "whatever code it holds; save a state_dict and load it with weights_only=True "
    "(torch.serialization.add_safe_globals for your own types)"
)


_OBJECT_MESSAGE = (
    "torch.load without weights_only loads weights only since torch 2.6, and this file holds a pickled object "
    "(the code uses the result as one: {use}), so there the call raises UnpicklingError; save a state_dict and "
    "load that, or allow-list the classes with torch.serialization.add_safe_globals"
)


def _place(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """What names a file or buffer, comparably: ``buf``, ``self.path``, ``'model.pt'``."""
    if isinstance(node, cst.SimpleString):
        return repr(node.evaluated_value)
    return dotted(node) if node is not None else None


def _round_trip(file_model: FileModel, load: CallSite) -> bool:
    """The load reads what a ``torch.save`` earlier in the same function wrote to the same
    place (``torch.save(module, buf); buf.seek(0); torch.load(buf)``, a deep copy): the
    program's own bytes, not a file from elsewhere."""
    place = _place(positional(load.node, 0) or keyword(load.node, "f"))
    if place is None:
        return False
    return any(
        save.order < load.order and file_model.qualify(save) in _SAVES
        and _place(positional(save.node, 1) or keyword(save.node, "f")) == place
        for save in load.scope.calls
    )


class UnsafeTorchLoad(Rule):
    code = "TL507"
    name = "unsafe-torch-load"
    message = (
        "torch.load without weights_only unpickles arbitrary objects on torch older than 2.6 (the project's "
        "target), so loading an untrusted file runs whatever code it holds; pass weights_only=True"
    )
    fix_safety = "unsafe"
    torch_programs_only = True
    # ``weights_only=False``; or no ``weights_only`` where the default unpickles, or where the code
    # may use what it loads as an object (which 2.6's weights-only default refuses).
    needs = Text("torch") & (_load(passes=("weights_only", False))
                             | TorchBefore(_SAFE_DEFAULT_SINCE) & _load(omits="weights_only")
                             | ResultUsedAsObject(_load(omits="weights_only")))
    docs = """
## What it does
Finds `torch.load` calls that unpickle arbitrary Python objects:

- `torch.load(f, weights_only=False)`, whatever the target torch version;
- `torch.load(f)` with no `weights_only` when the project's target torch
  version (`target-torch-version`, or the lower bound of torch in its
  dependencies) is older than 2.6, where that is the default;
- `torch.load(f)` with no `weights_only` whose result the code uses as a
  whole pickled object, whatever the target: called (`net(x)`), asked a
  method only modules and optimizers have (`.eval()`, `.parameters()`,
  `.state_dict()`, ...), directly, through one entry of a checkpoint
  (`checkpoint["decoder"].eval()`) or after `.to(device)`, or handed to
  `torch.from_numpy`. Since 2.6 that load raises `UnpicklingError`, and a
  project that states a lower bound of torch (or none) meets 2.6 and later.

Every spelling of the call is found: `torch.load`, `torch.serialization.load`,
`from torch import load`, aliases of `torch`.

## Why is this bad
A `.pt` file is a pickle. Unpickling calls whatever callables the file names,
with the arguments the file gives: a checkpoint downloaded from a model hub,
a colleague's share or a shared cluster folder can run any code on the
machine that loads it, with that user's rights. `weights_only=True` loads
tensors, primitive types and containers only (and the types registered with
`torch.serialization.add_safe_globals`), and refuses anything else before it
runs. It loads a `state_dict`, an optimizer's state and the usual
`{"model": ..., "optimizer": ..., "epoch": ...}` dictionaries.

A whole pickled model that loads on old torch fails on new torch: the same
line works or crashes depending on the version a user installs, and no
`weights_only` value makes it both safe and working. Saving the
`state_dict` does.

Not reported: `weights_only=True`; a `weights_only` given as a variable, or
possibly inside `**kwargs`; a load whose result nothing shows to be an
object (a state_dict, a tensor or a checkpoint dict are all subscripted and
moved alike), on a target of 2.6 or later; a file that allow-lists classes
(`torch.serialization.add_safe_globals`, `safe_globals`); calls passing a `pickle_module` (a deliberate
choice of unpickler, with which `weights_only=True` cannot be combined); other
libraries' `load` functions (`numpy.load`, `pickle.load`, `torch.jit.load`,
which reads TorchScript, not pickles); a load of the buffer or path a
`torch.save` earlier in the same function wrote (`torch.save(module, buf);
buf.seek(0); torch.load(buf, weights_only=False)`, a deep copy through
pickle), which reads the program's own bytes; test files, which load what they
have just saved.

## Example
```python
checkpoint = torch.load(args.resume, map_location="cpu", weights_only=False)
model.load_state_dict(checkpoint["model"])
```

## Use instead
```python
checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
model.load_state_dict(checkpoint["model"])
```

For a file you made yourself that holds more than tensors (a whole pickled
model, a custom config object), save its `state_dict` instead, or register
the types: `torch.serialization.add_safe_globals([MyConfig])`. Where the file
is trusted and must stay as it is, keep `weights_only=False` and silence the
line with `# noqa: TL507`, which says it was a decision.

## Fix safety
For a call without `weights_only` on a target older than 2.6, the fix adds
`weights_only=True` (not where the code uses the result as a pickled
object: that load would fail at once, so it gets no fix). It is unsafe: a checkpoint that holds a whole pickled
model, an `argparse.Namespace` or any other object outside the allowed types
then fails to load (`UnpicklingError`), where it loaded before. An explicit
`weights_only=False` is never rewritten: someone chose it, and the file it
reads may need it.
"""
    torch_version = """
`weights_only` arrived in PyTorch 1.13, and its default changed from `False`
to `True` in 2.6 (2.4 and 2.5 warn with a `FutureWarning` when it is left
out). So for a target of 2.6 or later only an explicit `weights_only=False` is
reported; for a target from 1.13 to 2.5 a call that leaves it out is reported
too, with the fix adding `weights_only=True`; for a target older than 1.13
there is no `weights_only` to pass (it would reach the unpickler and raise
`TypeError`), so only an explicit `weights_only=False` is reported. A load
whose result the code uses as a pickled object is reported on every target:
it fails on 2.6 and later, which a lower bound (or no bound) allows. The
target is `target-torch-version` in the config or `--target-torch-version`,
else the lower bound of torch in the project's dependencies
(docs/configuration.md). A project that declares no torch version is linted
at the newest torch torchlint knows: a load without `weights_only` that
reads weights is not reported there (see docs/torchfix.md for the figures
behind that choice, and how to get TorchFix's TOR102 behaviour).
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        defaults_to_unsafe = file_model.target_torch_version < _SAFE_DEFAULT_SINCE
        can_pass_it = file_model.target_torch_version >= _WEIGHTS_ONLY_SINCE
        for call in file_model.calls:
            if file_model.qualify(call) not in _LOADS:
                continue
            node = call.node
            if any(arg.star == "**" for arg in node.args):
                continue  # **kwargs may carry weights_only
            if keyword(node, "pickle_module") is not None or positional(node, 2) is not None:
                continue  # a chosen unpickler: weights_only=True cannot go with it
            if _round_trip(file_model, call):
                continue
            weights_only = keyword(node, "weights_only")
            if weights_only is not None:
                if literal_bool(weights_only) is False:
                    yield self.report(node, message=_EXPLICIT_MESSAGE)
                continue  # True, or decided elsewhere
            # Whatever the target, the project's torch requirement lets it meet 2.6 and later,
            # where this load fails; weights_only=True would not save it, so no fix.
            use = pickled_object_use(file_model, call)
            if use is not None:
                yield self.report(node, message=_OBJECT_MESSAGE.format(use=use))
                continue
            if defaults_to_unsafe and can_pass_it:
                fix = Fix("pass weights_only=True", ((node, with_keyword(node, "weights_only", cst.Name("True"))),))
                yield self.report(node, fix=fix)

    valid = (
        """\
import torch


def resume(model, optimizer, path):
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
""",
        # The default target (the newest torch known) loads weights only by default.
        """\
import json

import numpy as np
import torch


def restore(model, folder, trusted):
    model.load_state_dict(torch.load(f"{folder}/model.pt"))
    scripted = torch.jit.load(f"{folder}/model.ts")
    with open(f"{folder}/meta.json") as fh:
        meta = json.load(fh)
    table = np.load(f"{folder}/table.npy", allow_pickle=False)
    state = torch.load(f"{folder}/extra.pt", weights_only=not trusted)
    return scripted, meta, table, state
""",
        """\
# target-torch-version: 2.1
import dill
import torch


def load_any(path, **options):
    legacy = torch.load(path, pickle_module=dill)
    return legacy, torch.load(path, **options)
""",
        # A deep copy through pickle: the bytes loaded are the ones just saved.
        """\
# target-torch-version: 2.1
import io

import torch


def clone_module(module):
    with io.BytesIO() as buffer:
        torch.save(module, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=False)


def reload(model, path="last.pt"):
    torch.save(model.state_dict(), path)
    model.load_state_dict(torch.load(path))
""",
        """\
# target-torch-version: 1.12
import torch

state = torch.load("model.pt", map_location="cpu")
""",
        # Weights and features used as such; a whole model loaded with its classes allow-listed;
        # a name bound to a load and then to a freshly built model.
        """\
import torch

from model import Net


def evaluate(path, features_path):
    checkpoint = torch.load(path, map_location="cpu")
    model = Net()
    model.load_state_dict(checkpoint["model"])
    model.eval()
    features = torch.load(features_path).cuda()
    return model(features)


def serve(path):
    with torch.serialization.safe_globals([Net]):
        model = torch.load(path)
    model.eval()
    return model


def rebuild(path):
    model = torch.load(path)
    model = Net(**model["config"])
    model.eval()
    return model
""",
    )
    invalid = (
        """\
import torch


def resume(model, path):
    checkpoint = torch.load(path, map_location="cpu", weights_only=False)  # expect: TL507
    model.load_state_dict(checkpoint["state_dict"])
""",
        """\
from torch import load as torch_load


def pretrained(model, url_file):
    model.load_state_dict(torch_load(url_file, weights_only=0))  # expect: TL507
    return model
""",
        """\
# target-torch-version: 2.1
import torch as T
from torch import load


def restore(model, optimizer, path):
    state = T.load(path, map_location="cpu")  # expect: TL507
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(load(path + ".optim"))  # expect: TL507
""",
        # Bytes from elsewhere in a buffer, and a path saved by another function: not round trips.
        """\
import io

import requests
import torch


def fetch(url):
    buffer = io.BytesIO(requests.get(url).content)
    return torch.load(buffer, weights_only=False)  # expect: TL507


def save(model, path):
    torch.save(model, path)


def load_back(path):
    return torch.load(path, weights_only=False)  # expect: TL507
""",
        # A whole pickled model, at the newest torch: its load fails there.
        """\
import torch


def predict(path, batch):
    net = torch.load(path, map_location="cpu")  # expect: TL507
    return net(batch)


def caption(path, image):
    checkpoint = torch.load(path)  # expect: TL507
    decoder = checkpoint["decoder"]
    decoder = decoder.to("cuda")
    decoder.eval()
    return decoder(image)
""",
    )
