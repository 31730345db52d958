"""TL202 in a class method: ``self.optimizer.zero_grad()`` after backward.

The gradients computed by ``loss.backward()`` are cleared before
``self.optimizer.step()`` uses them.
"""


class Trainer:
    def __init__(self, model, optimizer, loss_fn, train_loader):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.train_loader = train_loader

    def train_epoch(self):
        self.model.train()
        for batch in self.train_loader:
            x, y = batch
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            self.optimizer.zero_grad()  # expect: TL202
            self.optimizer.step()
