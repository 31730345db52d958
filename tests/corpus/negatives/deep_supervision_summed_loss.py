# guards: TL301
"""Deep supervision: losses of several side outputs summed, one backward.

Correct: ``loss`` is re-initialised to 0 at the start of every batch, the
inner ``for pred in preds`` loop only sums the per-head losses of *this*
batch (it contains no backward/step), and a single ``loss.backward()``
follows.  Only ``loss.item()`` is kept across batches.
"""
import torch.nn as nn


def train_epoch(model, loader, optimizer, device, aux_weight=0.4):
    criterion = nn.CrossEntropyLoss(ignore_index=255)
    model.train()
    epoch_loss = 0.0
    for images, masks in loader:
        images, masks = images.to(device), masks.to(device)
        optimizer.zero_grad()
        preds = model(images)  # list: main output followed by auxiliary heads
        loss = 0
        for k, pred in enumerate(preds):
            weight = 1.0 if k == 0 else aux_weight
            loss = loss + weight * criterion(pred, masks)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(loader)
