"""TL301 for containers reached through subscripts and attributes: ``log[split].append(l)``,
``self.trace.append(j)``, ``self.stats["loss"] += j``. Each keeps every iteration's graph."""
import torch.nn.functional as F


def penalty(out, t):
    return F.mse_loss(out, t)


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt
        self.trace = []
        self.stats = {"loss": 0.0}
        self.log = {"train": [], "val": []}

    def run(self, loader):
        for x, t in loader:
            j = penalty(self.model(x), t)
            self.opt.zero_grad()
            j.backward()
            self.opt.step()
            self.trace.append(j)  # expect: TL301
            self.stats["loss"] += j  # expect: TL301
            self.log["train"].append(j)  # expect: TL301


def fit(model, loader, opt):
    log = {"train": [], "val": []}
    for split in ("train",):
        for x, t in loader:
            l = penalty(model(x), t)
            opt.zero_grad()
            l.backward()
            opt.step()
            log[split].append(l)  # expect: TL301
    return log
