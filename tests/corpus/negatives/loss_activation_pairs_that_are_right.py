# guards: TL801 TL802 TL803 TL804
"""Losses fed what they expect, next to activations a naive pairing check would blame.

A model that returns logits and probabilities (the loss takes the logits), a
``forward`` that applies softmax only in evaluation, ``log_softmax`` into
CrossEntropyLoss (it changes nothing), soft targets from a softmax (the target,
not the input), ``log`` of a softmax into NLLLoss, a sigmoid decoder into
BCELoss, a clamped output, a criterion rebound from BCELoss to
BCEWithLogitsLoss before the call, a model chosen at run time between a
softmax head and a logits head, and layers the file cannot read. The last three
come from the training corpus: DCGAN's discriminator with a ``data_parallel``
branch in ``forward`` (pytorch/examples), a sigmoid used only for the
accuracy next to BCEWithLogitsLoss (mrdbourke), and a sigmoid at the end of
``forward`` before BCELoss (Atcold).
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from models import ImportedNet  # the file cannot see what it returns


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        logits = self.fc(x)
        return logits, F.softmax(logits, dim=1)


class EvalProbabilities(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.fc(x)
        if not self.training:
            x = F.softmax(x, dim=1)
        return x


class SoftmaxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)


class LogitsHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(x)


decoder = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 32), nn.Sigmoid())
scorer = nn.Linear(32, 1)
layers = [nn.Linear(32, 10), nn.Softmax(dim=1)]
stacked = nn.Sequential(*layers)


def train(loader, teacher, args):
    two, evaluated = TwoOutputs(), EvalProbabilities()
    if args.softmax_head:
        chosen = SoftmaxHead()
    else:
        chosen = LogitsHead()
    criterion = nn.CrossEntropyLoss()
    bce = nn.BCELoss()
    for x, y, z, target in loader:
        logits, probs = two(x)
        loss = criterion(logits, y)
        loss = loss + criterion(evaluated(x), y)
        loss = loss + F.cross_entropy(F.log_softmax(logits, dim=1), y)
        loss = loss + F.cross_entropy(logits, F.softmax(teacher(x) / 4.0, dim=1))
        loss = loss + F.kl_div(F.log_softmax(logits, dim=1), probs.detach(), reduction="batchmean")
        loss = loss + F.nll_loss(torch.log(probs + 1e-8), y)
        loss = loss + bce(decoder(z), target)
        loss = loss + bce(scorer(x).clamp(0, 1).squeeze(1), y.float())
        loss = loss + criterion(chosen(x), y)
        loss = loss + criterion(ImportedNet()(x), y)
        loss = loss + criterion(stacked(x), y)
        bce = nn.BCEWithLogitsLoss()
        loss = loss + bce(scorer(x).squeeze(1), y.float())
        loss.backward()


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(nn.Conv2d(3, 64, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(64, 1, 4, 1, 0), nn.Sigmoid())

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class CircleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(2, 10)
        self.layer_2 = nn.Linear(10, 1)

    def forward(self, x):
        return self.layer_2(torch.relu(self.layer_1(x)))


class Readout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        out = torch.relu(self.fc1(x))
        out = self.fc2(out)
        out = torch.sigmoid(out)
        return out


def corpus_cases(images, X, y, samples, labels):
    netD, criterion = Discriminator(ngpu=2), nn.BCELoss()
    errD = criterion(netD(images), torch.ones(len(images)))
    model_0, loss_fn = CircleModel(), nn.BCEWithLogitsLoss()
    y_logits = model_0(X).squeeze()
    y_pred = torch.round(torch.sigmoid(y_logits))
    loss = loss_fn(y_logits, y)
    readout = Readout()
    outputs = readout(samples)
    return errD + loss + nn.BCELoss()(outputs, labels), y_pred


if __name__ == "__main__":
    train([], None, argparse.Namespace(softmax_head=True))
