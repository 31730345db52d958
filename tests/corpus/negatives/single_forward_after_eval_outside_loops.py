# guards: TL101
"""One forward pass after ``model.eval()`` outside any loop, as tutorials show a
result: one image classified and shown, one batch plotted, samples decoded once.

Correct enough not to report by default: a single forward's graph is freed as
soon as its output is dropped; nothing is evaluated over a dataset.
"""
import matplotlib.pyplot as plt
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
for step in range(100):
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()

model.eval()
out = model(x[:1])
plt.plot(out.detach().numpy()[0])


def show_prediction(model, image):
    model.eval()
    logits = model(image[None])
    plt.title(str(logits.argmax(1).item()))


show_prediction(model, x[0])
