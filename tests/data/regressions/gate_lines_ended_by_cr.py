import torch

def train(model, x, y, criterion):
    loss = criterion(model(x), y)
    loss.requires_grad = True
    loss.backward()
