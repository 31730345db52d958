"""``model/display.py``: which forwards are made to look at a model (TL107), asked directly."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.model import FileModel
from torchlint.model.display import runs_a_few_times, shown_only


def _forward(source: str, callee: str = "net"):
    model = FileModel(cst.parse_module(textwrap.dedent(source)), "m.py")
    [call] = [c for c in model.calls if c.callee == callee]
    return model, call


@pytest.mark.parametrize("source, shown", [
    # drawn, saved or measured, through methods, torch functions, captions and names
    ("fake = net(z)\nsave_image(fake.data, 'x.png')\n", True),
    ("ax.scatter(*net(z).detach().numpy().T)\n", True),
    ("out = net(x)\nimg = torch.cat((x, out.data), -2)\nsave_image(img, 'x.png')\n", True),
    ("label = net(x).argmax(1)\nplt.title(f'pred {names[label]}')\n", True),
    ("print(net(x).shape)\n", True),
    ("show_scatterplot(net(x).data, colors)\n", True),
    # anything else may keep the output: a loss, a list, a helper, a backward
    ("out = net(x)\nloss = criterion(out, y)\n", False),
    ("outs.append(net(x))\n", False),
    ("out = net(x)\nsave_image(out.data, 'x.png')\nkeep(out)\n", False),
    ("out = net(x)\nout.sum().backward()\nplt.imshow(out.detach())\n", False),
    ("acc = float((net(x).argmax(1) == y).sum())\nprint(acc)\n", False),
    ("out = net(x)\n", False),  # nothing read: no look either
])
def test_shown_only(source, shown):
    model, call = _forward("import torch\n" + source)
    assert shown_only(model, call) is shown


@pytest.mark.parametrize("source, few", [
    ("for s in range(1, 6):\n    y = net(s * x)\n", True),
    ("n = 5\nfor i in range(n):\n    y = net(x[i])\n", True),
    ("for i in range(8):\n    for j in range(2):\n        y = net(x[i, j])\n", True),
    ("for i in range(11):\n    y = net(x[i])\n", False),  # more than ten
    ("for i in range(len(xs)):\n    y = net(xs[i])\n", False),  # as many as the data
    ("n = 5\nn = 50\nfor i in range(n):\n    y = net(x[i])\n", False),  # bound twice: unknown
    ("for x in loader:\n    y = net(x)\n", False),
    ("y = net(x)\n", False),  # no loop: TL101's one-off rule, not this one
    ("def f():\n    for i in range(3):\n        y = net(x[i])\n", False),  # a function may run many times
])
def test_runs_a_few_times(source, few):
    model, call = _forward("import torch\n" + source)
    assert runs_a_few_times(model, call) is few
