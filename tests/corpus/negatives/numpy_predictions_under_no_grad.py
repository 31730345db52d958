# guards: TL101 TL301 TL402
"""Validation metrics with scikit-learn: predictions converted under no_grad.

Correct: ``.cpu().numpy()`` runs inside ``torch.no_grad()`` (and in a
function decorated with ``torch.inference_mode()``), where torch allows
``.numpy()`` and the outputs carry no graph anyway. Training logs use
``.item()``, ``.detach()`` and the old ``.data`` idiom.
"""
import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score


def train_epoch(model, loader, optimizer, device):
    model.train()
    running, seen = 0.0, 0
    train_scores = []
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        logits = model(images)
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        loss.backward()
        optimizer.step()
        running += loss.item() * images.size(0)
        seen += images.size(0)
        train_scores.append(torch.sigmoid(logits).detach().cpu().numpy())
        last_batch_loss = loss.data.cpu().numpy()
    return running / seen, np.concatenate(train_scores), last_batch_loss


def validate(model, loader, device):
    model.eval()
    scores, targets = [], []
    with torch.no_grad():
        for images, labels in loader:
            logits = model(images.to(device))
            scores.append(torch.sigmoid(logits).cpu().numpy())
            targets.append(labels.numpy())
    return roc_auc_score(np.concatenate(targets), np.concatenate(scores))


@torch.inference_mode()
def embed(model, batch):
    return model(batch).cpu().numpy()
