# guards: TL101 TL301
"""Train/test loops that count accuracy with ``.item()`` (pytorch-cifar style).

Correct: in the training loop, ``train_loss += loss.item()``,
``total += targets.size(0)`` and ``correct += predicted.eq(targets).sum().item()``
accumulate plain Python numbers, so no graph outlives an iteration; the test
loop runs under ``torch.no_grad()`` after ``net.eval()``.
"""
import torch


def train(net, trainloader, optimizer, criterion, device, epoch):
    print(f"\nEpoch: {epoch}")
    net.train()
    train_loss = 0
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()

        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
    return train_loss / (batch_idx + 1), 100.0 * correct / total


def test(net, testloader, criterion, device):
    net.eval()
    test_loss = 0
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(testloader):
            inputs, targets = inputs.to(device), targets.to(device)
            outputs = net(inputs)
            loss = criterion(outputs, targets)

            test_loss += loss.item()
            pred = outputs.argmax(dim=1)
            correct += (pred == targets).sum().item()
            total += targets.size(0)
    return test_loss / (batch_idx + 1), 100.0 * correct / total
