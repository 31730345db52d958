# guards: TL105
"""Lambdas and renamed imports that take ``volatile=`` and are not torch's Variable.

A lambda that drops the keyword arguments, a lambda over chainer's
``Variable`` (whose ``volatile`` still works), a name bound to a lambda and
later rebound, and the renamed torch Variable called with ``volatile=False``
or under ``torch.no_grad()``.
"""
import chainer
import torch
from torch import autograd
from torch.autograd import Variable as V

Wrap = lambda *args, **kwargs: autograd.Variable(*args)
CVar = lambda *args, **kwargs: chainer.Variable(*args, **kwargs)
Later = lambda *args, **kwargs: autograd.Variable(*args, **kwargs)
Later = lambda *args, **kwargs: args[0]


def act(q_net, state):
    a = Wrap(torch.FloatTensor(state), volatile=True)
    b = CVar(state, volatile="on")
    c = Later(torch.FloatTensor(state), volatile=True)
    d = V(torch.FloatTensor(state), volatile=False)
    with torch.no_grad():
        e = V(torch.FloatTensor(state), volatile=True)
        return q_net(a) + q_net(c) + q_net(d) + q_net(e), b
