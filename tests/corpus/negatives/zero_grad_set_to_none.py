# guards: TL201
"""``optimizer.zero_grad(set_to_none=True)`` at the top of each iteration.

Correct: ``set_to_none=True`` clears gradients (by dropping them) before the
forward/backward of each batch; step then sees only this batch's gradients.
"""
import torch.nn.functional as F


def train_epoch(model, train_loader, optimizer, scheduler, device):
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad(set_to_none=True)
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)
