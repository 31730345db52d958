"""TL101 in a DQN written for PyTorch 0.3: the agent's ``act`` runs the network and reads
the action off as ``q_value.max(1)[1].data[0]``, an index, at every environment step of
the loop that also trains. The graph of each acting forward is built and thrown away;
``act`` wants ``torch.no_grad()``."""
import random

import torch
import torch.nn as nn
import torch.optim as optim


class DQN(nn.Module):
    def __init__(self, n_inputs, n_actions):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(n_inputs, 128), nn.ReLU(), nn.Linear(128, n_actions))

    def forward(self, x):
        return self.layers(x)

    def act(self, state, epsilon):
        if random.random() > epsilon:
            state = torch.FloatTensor(state).unsqueeze(0)
            q_value = self.forward(state)  # expect: TL101
            action = q_value.max(1)[1].data[0]
        else:
            action = random.randrange(2)
        return action


model = DQN(4, 2)
optimizer = optim.Adam(model.parameters())
state = [0.0] * 4
for frame_idx in range(1, 1000):
    action = model.act(state, 0.1)
    loss = model(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
