# guards: TL503
"""A unit test that checks a NaN is traced back to the op that made it."""
import unittest

import torch


class TestNanTrace(unittest.TestCase):
    def test_sqrt_of_negative_is_reported(self):
        x = torch.tensor([-1.0], requires_grad=True)
        with torch.autograd.detect_anomaly():
            with self.assertRaises(RuntimeError):
                torch.sqrt(x).sum().backward()
