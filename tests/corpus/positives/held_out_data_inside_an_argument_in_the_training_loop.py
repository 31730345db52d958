"""
Held-out data handed to the model through a method call on it, every step of the training
loop: the name sits inside the argument, not as the argument itself.
"""
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 2), torch.randn(8, 2)
x_test, y_test = torch.randn(8, 2), torch.randn(8, 2)
history = []
for step in range(100):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    pred = model(x_test.float())  # expect: TL101
    history.append(((pred - y_test) ** 2).mean().detach())
