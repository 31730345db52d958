"""TL301: raw model outputs collected in a training loop.

``all_preds.append(outputs)`` keeps each batch's output, and with it the
batch's autograd graph, alive until the end of training.  The labels come
straight from the loader and carry no graph.
"""
import torch


def train(model, train_loader, optimizer, criterion, epochs):
    all_preds = []
    all_labels = []
    for epoch in range(epochs):
        model.train()
        for inputs, labels in train_loader:
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            all_preds.append(outputs)  # expect: TL301
            all_labels.append(labels)
    preds = torch.cat(all_preds).argmax(dim=1)
    labels = torch.cat(all_labels)
    return (preds == labels).float().mean().item()
