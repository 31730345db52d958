# guards: TL402
"""Linear probe on a frozen backbone: features extracted with autograd on.

Correct: every parameter of the backbone is frozen
(``requires_grad_(False)``), so its outputs on plain inputs do not require
grad and ``.numpy()`` is allowed; the probe itself is fitted by
scikit-learn. (A reader cannot tell which outputs are frozen, so torchlint
stays quiet in files that freeze parameters outside training functions.)
"""
import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from torchvision import models


def extract(backbone, loader, device):
    feats, labels = [], []
    for images, targets in loader:
        out = backbone(images.to(device))
        feats.append(out.flatten(1).cpu().numpy())
        labels.append(targets.numpy())
    return np.concatenate(feats), np.concatenate(labels)


def main(train_loader, device="cpu"):
    backbone = models.resnet18(weights=None)
    backbone.fc = torch.nn.Identity()
    backbone.requires_grad_(False)
    x, y = extract(backbone, train_loader, device)
    return LogisticRegression(max_iter=200).fit(x, y)


if __name__ == "__main__":
    main([])
