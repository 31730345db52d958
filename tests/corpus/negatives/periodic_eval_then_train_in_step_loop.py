# guards: TL104
"""Step-based training with periodic evaluation; the loop switches back with ``model.train()``.

Correct for TL104: the evaluation every ``eval_every`` steps puts the model in
eval mode, and the very next statement puts it back.
"""
import torch


def evaluate(model, val_loader, criterion):
    model.eval()
    with torch.no_grad():
        return sum(criterion(model(x), y).item() for x, y in val_loader) / len(val_loader)


def train(model, train_loader, val_loader, criterion, optimizer, max_steps, eval_every=500):
    step = 0
    model.train()
    while step < max_steps:
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            step += 1
            if step % eval_every == 0:
                print(step, evaluate(model, val_loader, criterion))
                model.train()
    return model
