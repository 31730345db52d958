import torch
W = torch.randn(3, 3)
W.requires_grad: bool = True
for _ in range(5):
    h = x @ W
    print(h.argmax().item())
