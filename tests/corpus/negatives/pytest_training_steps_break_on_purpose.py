# guards: TL102 TL201 TL205
"""A unit test drives the optimizer and autograd into their error paths on purpose:
a backward under no_grad inside pytest.raises, two steps without zero_grad to check
that gradients add up, a clip after the step. The training-step rules leave tests alone."""
import pytest
import torch


def test_backward_under_no_grad_raises():
    w = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        loss = (w * 2).sum()
    with pytest.raises(RuntimeError):
        loss.backward()


def test_gradients_accumulate_without_zero_grad():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    assert model.weight.grad is not None
