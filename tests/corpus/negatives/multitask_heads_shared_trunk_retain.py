# guards: TL302
"""Multi-task learning: one trunk forward, one backward per task head.

Correct: ``shared = trunk(x)`` is computed once per batch, *before* the loop
over heads.  Each head's loss backpropagates through that shared graph, so
every ``backward(retain_graph=True)`` except the last is required, and the
graph is only dropped when ``shared`` is rebound on the next batch.  The
retained graph is reused by the following head's backward in the inner loop,
which is exactly what ``retain_graph`` is for.  Gradients of all tasks
accumulate into the trunk and a single ``optimizer.step()`` applies them.
"""
import torch.nn as nn


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim, hidden, task_dims):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.heads = nn.ModuleList([nn.Linear(hidden, d) for d in task_dims])


def train_epoch(model, loader, optimizer, criteria, task_weights, device):
    model.train()
    epoch_losses = [0.0 for _ in model.heads]
    for x, targets in loader:
        x = x.to(device)
        optimizer.zero_grad()
        shared = model.trunk(x)
        for t, (head, criterion) in enumerate(zip(model.heads, criteria)):
            task_loss = task_weights[t] * criterion(head(shared), targets[t].to(device))
            task_loss.backward(retain_graph=True)
            epoch_losses[t] += task_loss.item()
        optimizer.step()
    return [total / len(loader) for total in epoch_losses]
