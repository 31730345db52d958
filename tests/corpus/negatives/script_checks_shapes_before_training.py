# guards: TL103
"""A notebook-style script looks at its untrained model before training it.

The model (batch-norm and dropout) is never put in eval mode, but the only
forwards outside training run before any training: a shape check on a few
validation images and a lazy-initialisation pass over ``train_valid_iter``
(training data, despite ``valid`` in its name). After training the script
saves the weights and evaluates nothing.
"""
import torch
from torch import nn

torch.manual_seed(0)  # it saves what it trains: seeded, or TL611 (opt-in) would rightly report it
model = nn.Sequential(nn.LazyLinear(64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))
with torch.no_grad():
    model(next(iter(train_valid_iter))[0])
    print(model(X_val[:8]).shape)

optimizer = torch.optim.Adam(model.parameters())
model.train()
for x, y in train_valid_iter:
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
torch.save(model.state_dict(), "model.pt")
