"""``model.mode_effects`` (would ``eval()`` change the model?) and ``modes.frozen_model``,
which TL103 and TL104 ask before they speak of dropout and batch-norm."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.model import FileModel
from torchlint.model.mode_effects import mode_free_model
from torchlint.model.modes import frozen_model


def file_model(source: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(source)), "m.py")


TEXT_CNN = '''
import torch
from torch import nn
import torch.nn.functional as F


def create_variable(tensor):
    return tensor.cuda() if torch.cuda.is_available() else tensor


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
        self.convs = nn.ModuleList([nn.Conv2d(1, 3, (k, 8)) for k in (2, 3)])
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        h = self.emb(x).unsqueeze(1)
        pooled = []
        for i, conv in enumerate(self.convs):
            mp = nn.MaxPool2d((3, 1))
            pooled.append(mp(F.relu(conv(h))))
        model = self.fc(create_variable(torch.cat(pooled, 1).flatten(1)))
        return model


model = TextCNN()
'''


def test_submodules_called_through_local_names_and_file_functions_are_followed():
    # ``conv`` and ``mp`` name layers, ``create_variable`` is the file's; ``model`` in forward is a tensor.
    assert mode_free_model(file_model(TEXT_CNN), "model")


def test_a_local_dropout_layer_still_counts():
    source = TEXT_CNN.replace("mp = nn.MaxPool2d((3, 1))", "mp = nn.Dropout(0.5)")
    assert not mode_free_model(file_model(source), "model")


@pytest.mark.parametrize("layer, free", [
    ("nn.GRU(8, 8, dropout=0.5)", True),  # one layer: no layer boundary for dropout to act on
    ("nn.GRU(8, 8, num_layers=1, dropout=0.5)", True),
    ("nn.GRU(8, 8, 2, dropout=0.5)", False),
    ("nn.LSTM(8, 8, num_layers=n, dropout=0.5)", False),  # a depth we cannot read
    ("nn.RNN(8, 8, 2, 'tanh', True, False, 0.0)", True),  # RNN's dropout is its 7th argument
    ("nn.RNN(8, 8, 2, 'tanh', True, False, 0.3)", False),
    ("nn.MultiheadAttention(8, 2, 0.1)", False),
])
def test_recurrent_dropout_acts_only_between_stacked_layers(layer, free):
    source = f"from torch import nn\nn = 2\nmodel = {layer}\n"
    assert mode_free_model(file_model(source), "model") is free


def test_data_parallel_is_as_mode_dependent_as_what_it_wraps():
    base = "from torch import nn\nmodel = nn.Sequential(nn.Linear(4, 4), {layer})\nmodel = nn.DataParallel(model)\n"
    assert mode_free_model(file_model(base.format(layer="nn.ReLU()")), "model")
    assert not mode_free_model(file_model(base.format(layer="nn.BatchNorm1d(4)")), "model")


@pytest.mark.parametrize("freeze, frozen", [
    ("backbone.requires_grad_(False)", True),
    ("for p in backbone.parameters():\n    p.requires_grad = False", True),
    ("for name, p in backbone.named_parameters():\n    if 'fc' not in name:\n        p.requires_grad = False", False),
    ("head.requires_grad_(False)", False),
    ("backbone.requires_grad_(True)", False),
])
def test_frozen_model(freeze, frozen):
    assert frozen_model(file_model(freeze + "\n"), "backbone") is frozen


def test_freezing_a_model_freezes_its_submodules():
    fm = file_model("model.requires_grad_(False)\n")
    assert frozen_model(fm, "model.backbone")
    assert not frozen_model(file_model("model.backbone.requires_grad_(False)\n"), "model")


def test_a_parameter_is_what_the_callers_pass():
    source = '''
from torch import nn


def test_step(model, loader):
    model.eval()
    return [model(x) for x in loader]


model_1 = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
model_1 = model_1.to("cpu")
model_2 = nn.Sequential(nn.Linear(4, 4), {layer})
test_step(model=model_1, loader=[])
test_step(model_2, [])
'''
    assert mode_free_model(file_model(source.format(layer="nn.Tanh()")), "model")
    assert not mode_free_model(file_model(source.format(layer="nn.Dropout(0.1)")), "model")


_NET = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, rate):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(rate)

'''


@pytest.mark.parametrize("source, loaded", [
    # built here with batch-norm, given trained weights: still in training mode
    ("import torch\nfrom torch import nn\nm = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
     "m.load_state_dict(torch.load('m.pt'))\n", True),
    (_NET.replace("nn.Dropout(rate)", "nn.Dropout(0.1)") + "m = Net(0).to('cuda')\nm.load_state_dict(sd)\n", True),
    # a rate the file does not show may be zero
    (_NET + "m = Net(0.1)\nm.load_state_dict(sd)\n", False),
    # no weights loaded: a fresh model, perhaps for a shape check
    ("import torch\nfrom torch import nn\nm = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n", False),
    # put in eval mode where it is built, or by its own class
    ("import torch\nfrom torch import nn\nm = nn.Sequential(nn.BatchNorm1d(4)).eval()\nm.load_state_dict(sd)\n", False),
    (_NET.replace("nn.Dropout(rate)", "nn.Dropout()") + "        self.eval()\n\nm = Net(1)\nm.load_state_dict(sd)\n",
     False),
    # a model from elsewhere may hold anything, in any mode
    ("import torch\nimport torchvision\nm = torchvision.models.resnet18()\nm.load_state_dict(sd)\n", False),
])
def test_models_loaded_in_training_mode(source, loaded):
    from torchlint.model.mode_effects import loaded_in_training_mode

    assert loaded_in_training_mode(file_model(source), "m") is loaded
