"""TL502: inputs gathered in a tuple first, one made to require grad afterwards."""
import torch
from torch.autograd import gradgradcheck


def bilinear(x, y, w):
    return torch.einsum("bi,ij,bj->b", x, w, y)


def verify_second_order(device="cpu"):
    x = torch.randn(3, 4, device=device, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 5, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 5, device=device, dtype=torch.float32)
    w.requires_grad = True
    inputs = (x, y, w)
    return gradgradcheck(bilinear, inputs)  # expect: TL502
