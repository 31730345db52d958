"""An evaluation program named like a unit test, as research repositories name them.

``test_net.py`` parses arguments, loads a checkpoint and loops over the test
loader in eval mode without ``no_grad``: it is evaluation code, not a unit
test, whatever its file name says.
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def build_net():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def test_net(net, loader):
    net.eval()
    correct = 0
    for images, labels in loader:
        outputs = net(images)  # expect: TL101
        assert outputs.shape[0] == labels.shape[0]
        correct += (outputs.argmax(1) == labels).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default="net.pt")
    args = parser.parse_args()
    net = build_net()
    net.load_state_dict(torch.load(args.checkpoint, weights_only=True))
    data = TensorDataset(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)))
    print(f"accuracy: {test_net(net, DataLoader(data, batch_size=16)):.3f}")


if __name__ == "__main__":
    main()
