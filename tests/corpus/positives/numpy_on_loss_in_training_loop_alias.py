"""Training loop (``import torch as T``) that logs raw tensors with ``.numpy()``."""
import torch as T
import torch.nn as nn


def train(net, loader, optimizer, epochs):
    criterion = nn.CrossEntropyLoss()
    history = {"loss": [], "probs": []}
    for epoch in range(epochs):
        for inputs, targets in loader:
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            history["loss"].append(loss.cpu().numpy())  # expect: TL402
            probs = T.softmax(outputs, dim=1)
            history["probs"].append(probs.to("cpu").numpy())  # expect: TL402
            history["probs"].append(outputs.detach().cpu().numpy())
    return history
