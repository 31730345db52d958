"""An auxiliary-classifier discriminator whose class head ends in an ``nn.Softmax`` layer inside an
``nn.Sequential``, handed back beside the validity score and unpacked from the tuple before a
cross-entropy takes it; the same through a helper that unpacks it. The softmax reaches the loss
only through those bindings, and the criteria are bound together, from one tuple."""
import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self, features=16, classes=10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, features), nn.LeakyReLU(0.2))
        self.validity = nn.Sequential(nn.Linear(features, 1), nn.Sigmoid())
        self.classes = nn.Sequential(nn.Linear(features, classes), nn.Softmax(dim=1))

    def forward(self, x):
        h = self.body(x)
        return self.validity(h), self.classes(h)


def class_probabilities(model, x):
    _, probs = model(x)
    return probs


def train(loader, epochs=1):
    discriminator = Discriminator()
    adversarial, auxiliary = nn.BCELoss(), nn.CrossEntropyLoss()  # bound together
    optimizer = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
    for _ in range(epochs):
        for x, labels in loader:
            optimizer.zero_grad()
            real, real_classes = discriminator(x)
            loss = adversarial(real, torch.ones_like(real)) + auxiliary(real_classes, labels)  # expect: TL801
            loss = loss + auxiliary(class_probabilities(discriminator, x), labels)  # expect: TL801
            loss.backward()
            optimizer.step()
