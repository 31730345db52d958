# guards: TL101
"""A PyTorch Lightning module with validation/test/predict step hooks.

Correct: Lightning's loops run ``validation_step``, ``test_step`` and
``predict_step`` under ``torch.no_grad()``/``torch.inference_mode()`` and call
``model.eval()`` itself, so calling ``self(x)`` there is fine.  None of these
hooks contains a loop: each is called once per batch by the framework, and
``self.validation_step_outputs`` is the documented way to collect
per-batch predictions (it is cleared at epoch end).  backward, step and
zero_grad are handled by the Trainer (automatic optimization).
"""
import lightning as L
import torch
import torch.nn.functional as F
from torch import nn


class LitClassifier(L.LightningModule):
    def __init__(self, in_features=784, num_classes=10, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(in_features, 128), nn.ReLU(), nn.Linear(128, num_classes))
        self.validation_step_outputs = []
        self.test_step_outputs = []

    def forward(self, x):
        return self.net(x.view(x.size(0), -1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        preds = self(x)
        loss = F.cross_entropy(preds, y)
        self.log("val_loss", loss, prog_bar=True)
        self.validation_step_outputs.append(preds)
        return preds

    def on_validation_epoch_end(self):
        all_preds = torch.cat(self.validation_step_outputs)
        self.log("val_pred_mean", all_preds.float().mean())
        self.validation_step_outputs.clear()

    def test_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        acc = (logits.argmax(dim=1) == y).float().mean()
        self.log("test_acc", acc)
        self.test_step_outputs.append(acc)

    def on_test_epoch_end(self):
        self.log("test_acc_epoch", torch.stack(self.test_step_outputs).mean())
        self.test_step_outputs.clear()

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        x, _ = batch
        return self(x).softmax(dim=-1)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    from lit_data import make_loaders  # project-local helper

    train_loader, val_loader, test_loader = make_loaders()
    model = LitClassifier()
    trainer = L.Trainer(max_epochs=3)
    trainer.fit(model, train_loader, val_loader)
    trainer.test(model, test_loader)
    predictions = trainer.predict(model, test_loader)
