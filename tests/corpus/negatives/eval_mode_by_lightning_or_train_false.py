# guards: TL103
"""Evaluation whose eval mode is set where a naive reader does not look.

- ``LitClassifier``: Lightning puts the module in eval mode (and under
  no_grad) around ``validation_step``, ``test_step`` and ``predict_step``.
- ``main`` switches with ``model.train(False)``, the spelling of ``eval()``
  that older tutorials use, before its test loop.
"""
import torch
import torch.nn.functional as F
import lightning as L
import torchvision


class LitClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet18(num_classes=10)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_acc", (self.net(x).argmax(1) == y).float().mean())

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self.net(x).argmax(1) == y).float().mean())

    def predict_step(self, batch, batch_idx):
        return self.net(batch[0]).argmax(1)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


def main(train_loader, test_loader, epochs=2):
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        model.train(True)
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
    model.train(False)
    correct = 0
    with torch.no_grad():
        for x, y in test_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    print(correct)


if __name__ == "__main__":
    main(None, None)
