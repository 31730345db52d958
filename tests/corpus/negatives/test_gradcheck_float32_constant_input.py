# guards: TL502
"""A float32 input that does not require grad: gradcheck never perturbs it.

Only the float64 input is differentiated; the float32 mask and the integer
index are constants of the function under test.
"""
import torch
from torch.autograd import gradcheck


def masked_gather(values, mask, index):
    return (values * mask.to(values.dtype)).index_select(0, index)


def test_masked_gather():
    values = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(6, 3) > 0.5
    weights = torch.ones(6, 3)
    index = torch.tensor([0, 2, 4])
    assert gradcheck(masked_gather, (values, mask.float(), index))
    assert gradcheck(lambda v, w: v * w, (values, weights))
