# guards: TL402
"""Predicted class indices and masks turned into numpy in a training script,
the way tutorials print or plot predictions.

Correct: the indices of ``torch.max(out, 1)``, ``out.max(1)[1]``, ``topk``,
``sort``, and ``argmax``, comparisons and ``.long()`` results are integer or
bool tensors; they never require grad, so ``.numpy()`` on them cannot raise.
"""
import torch

net = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(8, 4)
y = torch.randint(0, 3, (8,))

for step in range(10):
    out = net(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    _, predicted = torch.max(out, 1)
    pred_y = torch.max(out, 1)[1].squeeze().numpy()
    print(predicted.numpy(), pred_y, out.max(1)[1].numpy(), out.max(dim=1).indices.numpy())
    print(out.argmax(1).numpy(), torch.argmin(out, dim=-1).numpy())
    top_values, top_classes = out.topk(2, dim=1)
    print(top_classes.numpy(), torch.topk(out, 2)[1].numpy(), out.sort(1)[1].numpy())
    ranked, order = torch.sort(out, descending=True)
    print(order.numpy(), (predicted == y).numpy(), (out > 0).int().numpy(), out.long().numpy())
