# guards: TL502
"""gradcheck on inputs whose dtype comes from a parameter: not visible, not reported.

As in PyTorch's own OpInfo tests, the dtype is a test parameter, and the
inputs come from a helper.
"""
import pytest
import torch
from torch.autograd import gradcheck


def make_inputs(shape, dtype, device="cpu"):
    return torch.randn(shape, dtype=dtype, device=device, requires_grad=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_softplus(dtype):
    x = torch.randn(3, 4, dtype=dtype, requires_grad=True)
    assert gradcheck(lambda t: torch.nn.functional.softplus(t.real), (x,))


@pytest.mark.parametrize("shape", [(2, 3), (4,)])
def test_tanh(shape):
    x = make_inputs(shape, torch.float64)
    assert gradcheck(torch.tanh, (x,))


def check_op(op, sample, dtype):
    sample = sample.to(dtype).requires_grad_()
    return gradcheck(op, (sample,))
