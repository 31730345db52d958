from torch.nn import Parameter as P
import torch
W = P(torch.randn(3, 3))
for _ in range(5):
    x = torch.tanh(W)
    print(x.sum().item())
