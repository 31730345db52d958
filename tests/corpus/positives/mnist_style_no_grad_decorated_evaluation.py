"""MNIST-style script: ``@no_grad()`` test function, no eval() anywhere, the net trains."""
from torch import nn, no_grad, optim
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.dropout = nn.Dropout(0.25)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x.flatten(1)))))


def train(net, train_loader, optimizer):
    for data, target in train_loader:
        optimizer.zero_grad()
        loss = F.nll_loss(F.log_softmax(net(data), 1), target)
        loss.backward()
        optimizer.step()


@no_grad()
def test(net, test_loader):
    correct = 0
    for data, target in test_loader:
        output = net(data)  # expect: TL103
        correct += output.argmax(1).eq(target).sum().item()
    return correct / len(test_loader.dataset)


def main(train_loader, test_loader, epochs=10):
    net = Net()
    optimizer = optim.Adadelta(net.parameters(), lr=1.0)
    for epoch in range(epochs):
        train(net, train_loader, optimizer)
        print(test(net, test_loader))
