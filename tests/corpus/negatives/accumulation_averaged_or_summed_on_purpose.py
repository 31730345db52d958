# guards: TL207
"""Gradient accumulation that averages, sums on purpose, or does not accumulate at all.

Every loop here backpropagates more often than it steps a plain SGD, and none
applies k times the gradient it means to: the loss is divided on the way
(``/=``, ``torch.div``, inside ``scaler.scale``), an engine's ``backward``
scales it, gradients are rescaled before the step, the loss sums over its
batch on purpose, the gradients are cleared every iteration, the "micro-batches"
are chunks of one sequence (truncated backpropagation through time), or the
optimizer is Adam (its update barely depends on the gradient's scale).
``nano_gpt`` is the training corpus's accumulating loop (karpathy/nanoGPT),
here with SGD.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x, h=None):
        out, h = self.rnn(x, h)
        return self.fc(out), h


model = Net()
sgd = optim.SGD(model.parameters(), lr=0.1)
adam = optim.Adam(model.parameters(), lr=1e-3)


def divided_in_place(loader, k):
    for i, (x, y) in enumerate(loader):
        out, _ = model(x)
        loss = F.cross_entropy(out.flatten(0, 1), y.flatten())
        loss /= k
        loss.backward()
        if (i + 1) % k == 0:
            sgd.step()
            sgd.zero_grad()


def divided_by_torch(loader, k, scaler):
    for step, (x, y) in enumerate(loader, 1):
        with torch.autocast("cuda"):
            out, _ = model(x)
            loss = torch.div(F.cross_entropy(out.flatten(0, 1), y.flatten()), k)
        scaler.scale(loss).backward()
        if not step % k:
            scaler.step(sgd)
            scaler.update()
            sgd.zero_grad()


def engine(accelerator, loader, k):
    for i, (x, y) in enumerate(loader):
        out, _ = model(x)
        accelerator.backward(F.cross_entropy(out.flatten(0, 1), y.flatten()))  # scales by its own steps
        if (i + 1) % k == 0:
            sgd.step()
            sgd.zero_grad()


def rescaled_grads(loader, k):
    criterion = nn.CrossEntropyLoss(reduction="sum")
    tokens = 0
    for i, (x, y) in enumerate(loader):
        out, _ = model(x)
        criterion(out.flatten(0, 1), y.flatten()).backward()
        tokens += y.numel()
        if (i + 1) % k == 0:
            for p in model.parameters():
                p.grad /= tokens
            sgd.step()
            sgd.zero_grad()
            tokens = 0


def cleared_every_iteration(loader, k):
    for i, (x, y) in enumerate(loader):
        sgd.zero_grad()
        out, _ = model(x)
        F.cross_entropy(out.flatten(0, 1), y.flatten()).backward()
        if i % k == 0:
            sgd.step()  # steps only sometimes, but never on more than one batch's gradient


def truncated_bptt(loader, chunk):
    for x, y in loader:
        sgd.zero_grad()
        h = None
        for xs, ys in zip(x.split(chunk, dim=1), y.split(chunk, dim=1)):
            out, h = model(xs, h)
            F.cross_entropy(out.flatten(0, 1), ys.flatten()).backward()
            h = h.detach()
        sgd.step()


def with_adam(loader, k):
    for i, (x, y) in enumerate(loader):
        out, _ = model(x)
        F.cross_entropy(out.flatten(0, 1), y.flatten()).backward()
        if (i + 1) % k == 0:
            adam.step()
            adam.zero_grad()


def two_heads(batch, heads, trunk_opt):
    x, y = batch
    trunk_opt.zero_grad()
    features, _ = model(x)
    for head in heads:
        F.cross_entropy(head(features).flatten(0, 1), y.flatten()).backward(retain_graph=True)
    trunk_opt.step()


def nano_gpt(get_batch, gradient_accumulation_steps, max_iters, scaler, ctx):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    X, Y = get_batch("train")
    for iter_num in range(max_iters):
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, _ = model(X)
                loss = F.cross_entropy(logits.flatten(0, 1), Y.flatten())
                loss = loss / gradient_accumulation_steps
            X, Y = get_batch("train")
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
