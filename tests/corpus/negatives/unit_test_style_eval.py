# guards: TL101
"""pytest-style unit tests of a model's forward pass.

Correct: these are unit tests, not an evaluation pipeline: each test builds
a tiny model, switches it to eval mode to make dropout deterministic, and
runs a *single* forward pass on a handful of inputs to check shapes and
values.  There is no loop over data, and the graph dies with the test, so
wrapping it in no_grad would change nothing.  ``test_backward`` deliberately
needs autograd.
"""
import pytest
import torch
from torch import nn


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))


def test_forward():
    model = make_model()
    model.eval()
    x = torch.randn(3, 4)
    out = model(x)
    assert out.shape == (3, 2)


def test_eval_is_deterministic():
    model = make_model()
    model.eval()
    x = torch.randn(5, 4)
    assert torch.equal(model(x), model(x))


@pytest.mark.parametrize("batch", [1, 7])
def test_batch_sizes(batch):
    model = make_model()
    model.eval()
    out = model(torch.randn(batch, 4))
    assert out.shape == (batch, 2)


def test_backward():
    model = make_model()
    out = model(torch.randn(2, 4)).sum()
    out.backward()
    assert all(p.grad is not None for p in model.parameters())
