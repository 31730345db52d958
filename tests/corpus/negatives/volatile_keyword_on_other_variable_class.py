# guards: TL105
"""A project's own ``Variable`` (a config or symbolic variable) with a ``volatile`` option.

Correct for TL105: ``Variable`` here is not ``torch.autograd.Variable``.
"""
import torch

from myproject.symbols import Variable


def declare_inputs(shapes):
    return {name: Variable(name, shape=shape, volatile=True) for name, shape in shapes.items()}


def run(model, inputs):
    with torch.no_grad():
        return model(**inputs)
