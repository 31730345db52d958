import torch
import torch.nn.functional as F


def train(model, x, y, opt):
    pred, target = model(x), y
    err, aux = F.mse_loss(pred, target), 0
    err.requires_grad = True
    err.backward()
    opt.step()
