"""TL103 in files that only predict: the model is built here, so it starts in training mode.

``Net`` has batch-norm and dropout; ``load_state_dict`` gives it trained weights and keeps
the mode. The script classifies images under ``inference_mode`` and the service answers
requests under ``no_grad``, and neither ever calls ``eval()``: every prediction drops
activations at random and normalises by the request's own batch."""
import sys

import torch
import torch.nn as nn
from flask import Flask, jsonify, request
from PIL import Image
from torchvision import transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = nn.BatchNorm2d(16)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.fc(self.drop(x))


def classify(paths):
    model = Net()
    model.load_state_dict(torch.load("net.pt", weights_only=True))
    to_tensor = transforms.ToTensor()
    with torch.inference_mode():
        for path in paths:
            x = to_tensor(Image.open(path)).unsqueeze(0)
            print(path, model(x).argmax(1).item())  # expect: TL103


app = Flask(__name__)
scorer = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 3))
scorer.load_state_dict(torch.load("scorer.pt", weights_only=True))


@app.route("/predict", methods=["POST"])
def predict():
    features = torch.tensor(request.json["features"]).float()
    with torch.no_grad():
        probs = scorer(features).softmax(-1)  # expect: TL103
    return jsonify(probs.tolist())


if __name__ == "__main__":
    classify(sys.argv[1:])
