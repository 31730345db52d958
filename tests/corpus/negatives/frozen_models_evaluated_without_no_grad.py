# guards: TL101
"""Feature extraction and scoring with models whose every parameter is frozen.

Correct: ``backbone`` is frozen with ``requires_grad_(False)``, ``teacher`` by
setting ``p.requires_grad = False`` on every parameter, and the Lightning
``classifier`` with ``freeze()`` (which also puts it in eval mode). A forward
pass of a model none of whose parameters requires grad records no graph (the
inputs here do not require grad either), so ``no_grad`` would change nothing.
"""
import pytorch_lightning as pl
import torch
import torch.nn as nn
import torchvision


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 224 * 224, 10), nn.Dropout(0.1))

    def forward(self, x):
        return self.net(x)


def extract(loader):
    backbone = torchvision.models.resnet18(weights="IMAGENET1K_V1")
    backbone.requires_grad_(False)
    backbone.eval()
    feats = []
    for images, _ in loader:
        feats.append(backbone(images).cpu().numpy())
    return feats


def distill_targets(loader, teacher):
    for p in teacher.parameters():
        p.requires_grad = False
    teacher.eval()
    soft = []
    for images, _ in loader:
        soft.append(teacher(images).softmax(dim=1).cpu())
    return soft


def predict(loader, checkpoint):
    classifier = Classifier.load_from_checkpoint(checkpoint)
    classifier.freeze()
    predictions = []
    for images, _ in loader:
        predictions.append(classifier(images).argmax(dim=1))
    return predictions


if __name__ == "__main__":
    val_loader = [(torch.randn(2, 3, 224, 224), torch.tensor([0, 1]))]
    extract(val_loader)
    distill_targets(val_loader, torchvision.models.resnet50(weights="IMAGENET1K_V2"))
    predict(val_loader, "last.ckpt")
