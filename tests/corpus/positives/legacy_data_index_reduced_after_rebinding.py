"""TL505 on a loss a function first binds to a per-sample error, then reduces.

A prioritised-replay DQN's ``compute_td_loss`` keeps the per-sample error for
the new priorities and then rebinds ``loss = loss.mean()``: what it returns is
0-dim, and the caller's ``loss.data[0]`` raises. The same holds of a ``+=``
of a reduced term onto a reduced loss, and of a read after the rebinding in
the same loop body.
"""
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())


priorities = []


def compute_td_loss(state, action, reward, weights):
    q_value = model(state).gather(1, action.unsqueeze(1)).squeeze(1)
    loss = (q_value - reward.detach()).pow(2) * weights
    prios = loss + 1e-5
    loss = loss.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    priorities.append(prios.data.cpu().numpy())
    return loss


def regularised(state, reward):
    loss = (model(state).sum(1) - reward).pow(2)
    loss = loss.sum()
    loss += 1e-4 * model.weight.norm()
    return loss


losses = []
for frame in range(100):
    state, reward = torch.randn(8, 4), torch.randn(8)
    action, weights = torch.randint(0, 2, (8,)), torch.ones(8)
    loss = compute_td_loss(state, action, reward, weights)
    losses.append(loss.data[0])  # expect: TL505
    print(regularised(state, reward).data[0])  # expect: TL505
    err = (model(state).sum(1) - reward).abs()
    print(np.float32(err.data[0]))
    err = err.max()
    print(err.data[0])  # expect: TL505
