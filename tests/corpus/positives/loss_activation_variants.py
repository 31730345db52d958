"""Losses fed the wrong activation by the ways real code reaches them: a LightningModule's ``self(x)``,
``model.forward(x)``, a wrapped or compiled model, a forward inherited from a base class of the
file, one element of a tuple a model returns, and a criterion passed in by the only caller."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(32, 10)
        self.act = nn.Softmax(dim=1)

    def forward(self, x):
        return self.act(self.body(x))


class Child(Base):
    pass


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(F.softmax(self.fc(x), dim=1), y)  # expect: TL801


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.adv = nn.Sequential(nn.Linear(32, 1), nn.Sigmoid())
        self.cls = nn.Sequential(nn.Linear(32, 10), nn.Softmax(dim=1))

    def forward(self, x):
        return self.adv(x), self.cls(x)


def fit(model, loader, criterion):
    for x, y in loader:
        criterion(model.forward(x), y).backward()  # expect: TL803


def main(loader):
    wrapped = nn.DataParallel(Child()).cuda()
    compiled = torch.compile(Base())
    pair = Pair()
    bce_logits = nn.BCEWithLogitsLoss()
    for x, y in loader:
        a = nn.CrossEntropyLoss()(wrapped(x), y)  # expect: TL801
        b = F.cross_entropy(compiled(x), y)  # expect: TL801
        validity, classes = pair(x)
        c = bce_logits(validity.view(-1), y.float())  # expect: TL802
        d = F.cross_entropy(pair(x)[1], y)  # expect: TL801
        (a + b + c + d).backward()
    fit(Base(), loader, nn.NLLLoss())
