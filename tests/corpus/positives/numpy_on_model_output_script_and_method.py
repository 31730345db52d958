"""A notebook-style script and a trainer class that convert outputs with ``.numpy()``."""
import matplotlib.pyplot as plt
import torch
from torch import nn

xs = torch.linspace(-3, 3, 200).unsqueeze(1)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
prediction = model(xs)
plt.plot(xs.numpy(), prediction.numpy())  # expect: TL402


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def fit_batch(self, x, y):
        self.optimizer.zero_grad()
        pred = self.model(x)
        loss = nn.functional.mse_loss(pred, y)
        loss.backward()
        self.optimizer.step()
        return loss.item(), pred.squeeze(1).cpu().numpy()  # expect: TL402
