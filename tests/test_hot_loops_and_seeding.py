"""The model facts behind TL603, TL604, TL611 and TL612, asked directly.

Step loops and what runs on every step (``hot_loops``), device tensors read to the host and
what for (``host_reads``), host-made tensors copied to the device (``host_copies``), the order a
program runs in and whether it decides about seeds (``seeding``), generators DataLoader workers
copy (``worker_rng``).
"""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.model import FileModel
from torchlint.model.host_copies import host_copies
from torchlint.model.host_reads import host_reads, kept_only
from torchlint.model.hot_loops import hot_loops, per_step_functions, step_loops
from torchlint.model.seeding import mentions_seeding, saves_after_training
from torchlint.model.worker_rng import copied_draws, rng_draws


def build(source: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(source)), "m.py")


def line_of(model: FileModel, node: cst.CSTNode) -> str:
    return model.module.code_for_node(node)


TRAIN = """\
import torch
device = torch.device("cuda")

def train_epoch(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

for epoch in range(10):
    train_epoch(model, loader, optimizer, criterion)
"""


def test_the_step_loop_is_the_one_inside_the_helper_not_the_epoch_loop():
    model = build(TRAIN)
    [loop] = step_loops(model)
    assert loop.scope.name == "train_epoch"
    assert hot_loops(model) == (loop,)


def test_no_hot_loop_without_cuda():
    model = build(TRAIN.replace('"cuda"', '"cpu"'))
    assert step_loops(model) and hot_loops(model) == ()


USES = """\
import torch
for x, y in loader:
    x, y = x.cuda(), y.cuda()
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    {statement}
"""


@pytest.mark.parametrize("statement, kept", [
    ("total += loss.item()", True),
    ("total = total + loss.item()", True),
    ("losses.append(loss.item())", True),
    ('writer.add_scalar("loss", loss.item(), step)', True),
    ('print("{:.3f}".format(loss.item()))', True),
    ("value = loss.item(); history[step] = value", True),
    ("value = loss.item(); ok = math.isfinite(value)", False),
    ("if loss.item() > 10: break", False),
    ("state = env.step(out.argmax().item())", False),
    ("word = vocab[out.argmax().item()]", False),
])
def test_what_the_value_read_is_for(statement, kept):
    model = build(USES.format(statement=statement))
    [loop] = step_loops(model)
    reads = [read for read in host_reads(model, loop) if read.kind == "item"]
    assert reads and all(kept_only(model, read, loop) is kept for read in reads)


def test_a_host_value_is_not_a_device_read():
    model = build(USES.format(statement="n += len(y) + y.size(0) + x.shape[0]; s = float(lr)"))
    [loop] = step_loops(model)
    assert list(host_reads(model, loop)) == []


COPIES = """\
import torch
device = torch.device("cuda")
mean = torch.tensor([0.5, 0.5])

def penalty(d, real):
    return (d(real) - torch.ones(real.size(0), 1).to(device)).pow(2).mean()

for x, tokens in loader:
    tokens.append(0)
    a = torch.ones(batch_size, 1).to(device)
    b = torch.zeros(x.size(0)).to(device)
    c = torch.tensor(tokens).to(device)
    d = torch.tensor([1.0, 2.0]).float().cuda()
    e = mean.to(device)
    f = torch.randn(batch_size, 8).to(device)
    loss = penalty(D, x.to(device)) + criterion(model(x.to(device)), a)
    loss.backward()
    optimizer.step()
"""


def test_host_copies_and_whether_their_values_change():
    model = build(COPIES)
    [loop] = step_loops(model)
    found = {line_of(model, copy.call.node): (copy.name, copy.invariant, copy.made_before)
             for copy in host_copies(model, loop)}
    assert found == {
        "torch.ones(batch_size, 1).to(device)": ("ones", True, False),
        "torch.zeros(x.size(0)).to(device)": ("zeros", False, False),  # a fill whose size follows the batch
        "torch.tensor(tokens).to(device)": ("tensor", False, False),  # tokens.append(...) changes it
        "torch.tensor([1.0, 2.0]).float().cuda()": ("tensor", True, False),
        "mean.to(device)": ("tensor", True, True),
    }
    [helper] = per_step_functions(model, loop)
    assert helper.name == "penalty"
    assert [copy.name for copy in host_copies(model, helper)] == ["ones"]


PROGRAM = """\
import torch

def save():
    torch.save(model.state_dict(), "model.pt")

torch.save(vectors, "vectors.pt")
main()

def main():
    for x, y in loader:
        criterion(model(x), y).backward()
        optimizer.step()
save()
"""


def test_saves_count_from_the_first_training_step_in_the_order_the_program_runs():
    model = build(PROGRAM)
    saves = saves_after_training(model)
    assert [line_of(model, call.node) for call in saves] == ['torch.save(model.state_dict(), "model.pt")']
    assert not mentions_seeding(model)


@pytest.mark.parametrize("extra", [
    "torch.manual_seed(0)",
    "L.seed_everything(1)",
    "trainer = Trainer(model, seed=args.seed)",
    "# torch.manual_seed(1)  # reproducible",
    "engine = PrivacyEngine(secure_mode=True)",
])
def test_seeding_is_told_generously(extra):
    assert mentions_seeding(build(PROGRAM + extra + "\n"))


def test_a_library_module_is_no_program():
    source = "import torch\n\ndef train(model, loader, optimizer):\n" \
             "    for x, y in loader:\n        model(x).sum().backward()\n        optimizer.step()\n" \
             "    torch.save(model.state_dict(), 'm.pt')\n"
    assert saves_after_training(build(source)) == []


WORKERS = """\
import numpy as np
import random
import torch
from torch.utils.data import DataLoader, Dataset

shared = random.Random(0)

class Base(Dataset):
    def __init__(self):
        self.rng = np.random.RandomState(0)
        self.gen = torch.Generator().manual_seed(0)

class Held(Base):
    def __getitem__(self, i):
        return self.noise(i) + torch.rand(2, generator=self.gen)

    def noise(self, i):
        return self.rng.normal() + shared.random()

class Global(Dataset):
    def __getitem__(self, i):
        return np.random.rand()

held = Held()
DataLoader(held, num_workers=2)
DataLoader(held, num_workers=0)
DataLoader(held, num_workers=2, worker_init_fn=init)
DataLoader(Global(), num_workers=2)
"""


def test_generators_a_dataset_draws_from_in_its_workers():
    model = build(WORKERS)
    assert set(rng_draws(model, "Held")) == {"self.rng", "self.gen", "shared"}
    assert rng_draws(model, "Global") == ("np.random",)
    found = [(draws.dataset_class, set(draws.generators)) for draws in copied_draws(model, global_numpy=False)]
    assert found == [("Held", {"self.rng", "self.gen", "shared"})]
    old = [draws.dataset_class for draws in copied_draws(model, global_numpy=True)]
    assert old == ["Held", "Global"]  # before torch 1.9, NumPy's global generator was copied too


def test_a_model_moved_to_the_device_is_no_tensor_to_read():
    model = build(USES.format(statement="print(model); net = model.cpu()").replace(
        "import torch\n", "import torch\nmodel = Net().to('cuda')\n"))
    [loop] = step_loops(model)
    assert list(host_reads(model, loop)) == []
