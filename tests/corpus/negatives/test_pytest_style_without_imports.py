# guards: TL101 TL301
"""pytest unit tests that import no test framework: pytest finds them by name.

Correct: each ``test_*`` function asserts and nothing in the file calls it;
the test runner does. A single forward pass in eval mode to check a shape, a
loss kept in a list to compare, an in-place write to a parameter to provoke
the error autograd raises: each is what a unit test is for.
"""
import torch
from torch import nn


def make_model():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))


def test_eval_forward_shape():
    model = make_model().eval()
    for batch in (1, 3):
        assert model(torch.randn(batch, 4)).shape == (batch, 2)


def test_losses_decrease():
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 2)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss)
    assert losses[-1] < losses[0]


def test_inplace_write_to_a_parameter_raises():
    weight = nn.Linear(4, 2).weight
    try:
        weight.add_(1)
    except RuntimeError:
        return
    raise AssertionError("autograd let an in-place write to a leaf through")


class TestTraining:
    def test_one_step_changes_weights(self):
        model = make_model()
        before = [p.clone() for p in model.parameters()]
        model(torch.randn(2, 4)).sum().backward()
        for p in model.parameters():
            p.data -= 0.1 * p.grad
        assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
