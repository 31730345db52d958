# guards: TL201 TL803
"""Code under a literal constant that can never run gives no finding: the body of
``if False:``, ``if 0:``, ``if None:``, ``while False:`` and ``if not True:``, and the
``elif``/``else`` of ``if True:`` and ``if 1:`` (spro/practical-pytorch's seq2seq
keeps its old training loops in the ``elif``/``else`` of an ``if True:``)."""
import torch
from torch import nn
import torch.nn.functional as F

decoder = nn.Sequential(nn.Linear(256, 1000), nn.Dropout(0.2))
criterion = nn.NLLLoss()


def step(hidden, target, use_teacher_forcing):
    if True:
        loss = criterion(F.log_softmax(decoder(hidden), dim=1), target)
    elif use_teacher_forcing:
        loss = criterion(decoder(hidden), target)
    else:
        loss = criterion(decoder(hidden), target)
    if 1:
        pass
    else:
        loss = criterion(decoder(hidden), target)
    if False:
        loss = criterion(decoder(hidden), target)
    if 0:
        loss = criterion(decoder(hidden), target)
    if None:
        loss = criterion(decoder(hidden), target)
    while False:
        loss = criterion(decoder(hidden), target)
    while 0:
        loss = criterion(decoder(hidden), target)
    if not True:
        loss = criterion(decoder(hidden), target)
    return loss


def train(model, loader, optimizer):
    if False:
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
