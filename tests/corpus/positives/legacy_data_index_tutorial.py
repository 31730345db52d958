"""A PyTorch 0.3 tutorial script: every number is read with ``.data[0]``.

The criterion is a module-level ``nn.CrossEntropyLoss()``, the VAE-style loss
function returns a sum, the accuracy is a full ``sum()``, and one loss is
read through ``.data.cpu().numpy()[0]`` inside ``float(...)``. A sequence
model adds one loss per step to ``loss = 0``.
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Variable

loss_func = nn.CrossEntropyLoss()


def vae_loss(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, size_average=False)
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def train(cnn, vae, loader, optimizer, epochs):
    for epoch in range(epochs):
        for step, (b_x, b_y) in enumerate(loader):
            output = cnn(Variable(b_x))
            loss = loss_func(output, Variable(b_y))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 50 == 0:
                pred_y = torch.max(output, 1)[1].data.squeeze()
                accuracy = (pred_y == b_y).sum().data[0] / float(b_y.size(0))  # expect: TL505
                print("Epoch: ", epoch, "| train loss: %.4f" % loss.data[0], accuracy)  # expect: TL505
        recon, mu, logvar = vae(b_x)
        vae_total = vae_loss(recon, b_x, mu, logvar)
        print(float(vae_total.data.cpu().numpy()[0]))  # expect: TL505


def train_sequence(decoder, optimizer, inputs, targets):
    hidden = decoder.init_hidden()
    optimizer.zero_grad()
    loss = 0
    for step in range(len(inputs)):
        output, hidden = decoder(inputs[step], hidden)
        loss += loss_func(output, targets[step])
    loss.backward()
    optimizer.step()
    return loss.data[0] / len(inputs)  # expect: TL505
