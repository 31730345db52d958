"""The values of ``torch.max(out, 1)`` (unlike its indices) and an elementwise
``torch.max(a, b)`` still carry the graph: ``.numpy()`` on them raises."""
import torch

net = torch.nn.Linear(4, 3)
x = torch.randn(8, 4)
out = net(x)
values, indices = torch.max(out, 1)
print(values.numpy())  # expect: TL402
print(out.max(1)[0].numpy())  # expect: TL402
print(torch.max(out, torch.zeros_like(out))[1].numpy())  # expect: TL402
print(out.topk(2).values.numpy())  # expect: TL402
