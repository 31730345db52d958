# guards: TL103
"""Files that only predict, each correct about module modes.

``recalibrate`` runs the model for batch-norm's running statistics and uses no output;
``shapes`` runs random input to print a shape; ``Frozen`` puts itself in eval mode; the
scripted model and the pretrained one keep (or set) the mode they were saved in;
``Tagger`` has no dropout or batch-norm, so eval() would change nothing; ``Encoder``'s
dropout rate comes from a config that may be zero; ``load_for_serving`` switches the model
it loads; Lightning puts the model in eval mode around ``predict_step``."""
import pytorch_lightning as pl
import torch
import torch.nn as nn
from transformers import AutoModel


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2))
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        return self.head(self.body(x))


class Frozen(Net):
    def __init__(self):
        super().__init__()
        self.eval()


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.out = nn.Linear(16, 5)

    def forward(self, tokens):
        return self.out(self.embed(tokens))


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.drop(self.fc(x))


class Predictor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = Net()

    def predict_step(self, batch, batch_idx):
        return self.net(batch).argmax(1)


def recalibrate(loader):
    model = Net()
    model.load_state_dict(torch.load("net.pt", weights_only=True))
    with torch.no_grad():
        for x in loader:
            model(x)
    torch.save(model.state_dict(), "recalibrated.pt")


def shapes():
    net = Net()
    net.load_state_dict(torch.load("net.pt", weights_only=True))
    with torch.no_grad():
        out = net(torch.randn(4, 8))
    print(out.shape)


def load_for_serving(path):
    model = Net()
    model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    return model


def predict_all(loader, cfg):
    frozen = Frozen()
    frozen.load_state_dict(torch.load("net.pt", weights_only=True))
    scripted = torch.jit.load("scripted.pt")
    pretrained = AutoModel.from_pretrained("bert-base-uncased")
    tagger = Tagger()
    tagger.load_state_dict(torch.load("tagger.pt", weights_only=True))
    encoder = Encoder(cfg)
    encoder.load_state_dict(torch.load("encoder.pt", weights_only=True))
    served = load_for_serving("net.pt")
    rows = []
    with torch.inference_mode():
        for x, tokens, ids in loader:
            rows.append((frozen(x).argmax(1).tolist(), scripted(x).argmax(1).tolist(),
                         pretrained(ids).last_hidden_state[:, 0].tolist(), tagger(tokens).argmax(-1).tolist(),
                         encoder(x).sum().item(), served(x).argmax(1).tolist()))
    return rows
