# guards: TL503
"""Anomaly detection switched by command-line flags, as in most research repos."""
import argparse

import torch
from torch import nn


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--detect-anomaly", action="store_true")
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--epochs", type=int, default=10)
    return parser.parse_args()


def train(model, loader, optimizer, args):
    torch.autograd.set_detect_anomaly(args.detect_anomaly)
    if args.debug:
        torch.autograd.set_detect_anomaly(True)
    loss_fn = nn.MSELoss()
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()


def fit(model, loader, optimizer, cfg):
    with torch.autograd.set_detect_anomaly(cfg.get("detect_anomaly", False)):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
    return model
