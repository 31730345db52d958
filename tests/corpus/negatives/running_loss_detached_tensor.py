# guards: TL301
"""DDP-style running loss kept as a detached tensor to avoid host syncs.

Correct: ``running_loss += loss.detach()`` accumulates a tensor with no
autograd history (it avoids a GPU->CPU sync every step); it is all-reduced
and converted to a float only when logging.
"""
import torch
import torch.distributed as dist


def train_epoch(model, loader, optimizer, criterion, device, log_every=50):
    model.train()
    running_loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
        if (step + 1) % log_every == 0:
            dist.all_reduce(running_loss)
            print(f"step {step + 1}: loss {running_loss.item() / (log_every * dist.get_world_size()):.4f}")
            running_loss.zero_()
    return model
