# guards: TL502
"""Unit tests that gradcheck custom ops the way PyTorch's docs do: in float64."""
import torch
from torch.autograd import gradcheck, gradgradcheck


def cube(x, w):
    return (x @ w) ** 3


def test_cube_gradients():
    x = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
    w = torch.randn(3, 2).double().requires_grad_()
    assert gradcheck(cube, (x, w), eps=1e-6, atol=1e-4)


def test_cube_second_order():
    x = torch.randn(4, 3, requires_grad=True, dtype=torch.float64)
    w = torch.randn(3, 2).to(torch.float64)
    w.requires_grad_()
    inputs = (x, w)
    assert gradgradcheck(cube, inputs)


def test_complex():
    z = torch.randn(5, dtype=torch.cdouble, requires_grad=True)
    assert torch.autograd.gradcheck(torch.sin, (z,))
