"""TL101 where evaluation is told by use, not by name: ``topk_hits`` runs the model it is
handed by ``measure``, which ``main`` calls right after ``model.eval()``; ``run_epoch`` is
called with ``train=False`` and only guards its backward; a phase loop over
``("train", "val")`` does the same without ``set_grad_enabled``."""
import torch


def topk_hits(net, x, y):
    out = net(x)  # expect: TL101
    return (out.topk(5, 1)[1] == y[:, None]).any(1).sum().item()


def measure(net, batches):
    hits = 0
    for x, y in batches:
        hits += topk_hits(net, x, y)
    return hits


def main(model, train_loader, val_loader, opt, criterion):
    for epoch in range(10):
        model.train()
        for x, y in train_loader:
            loss = criterion(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        print(measure(model, val_loader))


def run_epoch(model, data, opt, criterion, train=True):
    total = 0.0
    for x, y in data:
        out = model(x)  # expect: TL101
        loss = criterion(out, y)
        if train:
            opt.zero_grad()
            loss.backward()
            opt.step()
        total += loss.item()
    return total


def fit(model, data, opt, criterion):
    for epoch in range(3):
        run_epoch(model, data["train"], opt, criterion, train=True)
        run_epoch(model, data["val"], opt, criterion, train=False)


def phases(model, loaders, opt, criterion):
    for phase in ("train", "val"):
        if phase == "train":
            model.train()
        else:
            model.eval()
        for x, y in loaders[phase]:
            out = model(x)  # expect: TL101
            loss = criterion(out, y)
            if phase == "train":
                opt.zero_grad()
                loss.backward()
                opt.step()
