# guards: TL105
"""Chainer 1.x code: its ``Variable`` took ``volatile='on'``, and that flag still worked there.

Correct for TL105: the file is written for chainer, not torch.
"""
import chainer
import chainer.functions as F
from chainer import Variable


def evaluate(model, batches):
    total = 0.0
    for x, t in batches:
        x = Variable(x, volatile="on")
        t = chainer.Variable(t, volatile=True)
        total += float(F.softmax_cross_entropy(model(x), t).data)
    return total
