# guards: TL502
"""A test module that makes float64 the default dtype: ``torch.randn`` is double here."""
import unittest

import torch
from torch.autograd import gradcheck

torch.set_default_dtype(torch.float64)


class TestKernels(unittest.TestCase):
    def test_rbf_kernel_gradient(self):
        x = torch.randn(5, 2, requires_grad=True)
        lengthscale = torch.rand(1, requires_grad=True)

        def rbf(a, ell):
            return torch.exp(-torch.cdist(a, a) ** 2 / ell)

        self.assertTrue(gradcheck(rbf, (x, lengthscale)))

    def test_tuned_float32(self):
        # eps and atol chosen for single precision on purpose
        x = torch.randn(5, dtype=torch.float32, requires_grad=True)
        self.assertTrue(gradcheck(torch.sigmoid, (x,), eps=1e-3, atol=1e-2))
