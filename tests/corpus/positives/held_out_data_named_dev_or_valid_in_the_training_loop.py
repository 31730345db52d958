"""
Held-out data pushed through the model every few steps of the training loop, named with
the tokens of evaluation data that gates once missed (dev, valid, holdout, a capital after
it), with no loader, no eval() and no number read off the forward anywhere in the file.
"""
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 2), torch.randn(8, 2)
x_dev, y_dev = torch.randn(8, 2), torch.randn(8, 2)
x_valid, testX, holdout_x = torch.randn(8, 2), torch.randn(8, 2), torch.randn(8, 2)
history = []
for step in range(100):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        pred = model(x_dev)  # expect: TL101
        history.append(((pred - y_dev) ** 2).mean().detach())
        history.append(model(x_valid).detach())
        history.append(model(testX).detach())
        history.append(model(holdout_x).detach())
