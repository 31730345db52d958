"""TL503: a training script that switches anomaly mode on for good at start-up."""
import torch
from torch import nn
from torch.utils.data import DataLoader


def main(dataset, epochs=10):
    torch.autograd.set_detect_anomaly(True)  # expect: TL503
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    return model


if __name__ == "__main__":
    torch.autograd.set_detect_anomaly(mode=True, check_nan=True)  # expect: TL503
    main(torch.utils.data.TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,))))
