"""One function builds a torchvision model, trains it and then tests it, never calling eval().

The model is built in ``main`` (an inference script may load a model in any
mode it wants), but ``main`` trained it first: the test loop runs ResNet's
batch-norm in training mode (TL103), with autograd recording (TL101).
"""
import torch
import torchvision


def main(train_loader, test_loader, epochs):
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    correct = 0
    for x, y in test_loader:
        correct += (model(x).argmax(1) == y).sum().item()  # expect: TL101, TL103
    print(correct)


if __name__ == "__main__":
    main(None, None, 1)
