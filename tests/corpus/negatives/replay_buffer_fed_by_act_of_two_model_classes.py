# guards: TL304
"""A DQN notebook run top to bottom: ``model`` is built from one class, moved with
``model = model.cuda()``, and later rebound to a second class (a CNN for Atari). Each
class's ``act`` reads the action off as an index (``max(1)[1].data[0]`` of a forward
under ``no_grad``), so what the replay buffer keeps carries no graph: no TL304,
whichever class ``model`` holds."""
import random
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

USE_CUDA = torch.cuda.is_available()


class ReplayBuffer:
    def __init__(self, capacity):
        self.buffer = deque(maxlen=capacity)

    def push(self, state, action, reward, next_state, done):
        self.buffer.append((np.expand_dims(state, 0), action, reward, np.expand_dims(next_state, 0), done))

    def sample(self, batch_size):
        state, action, reward, next_state, done = zip(*random.sample(self.buffer, batch_size))
        return np.concatenate(state), action, reward, np.concatenate(next_state), done

    def __len__(self):
        return len(self.buffer)


class DQN(nn.Module):
    def __init__(self, n_inputs, n_actions):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(n_inputs, 128), nn.ReLU(), nn.Linear(128, n_actions))

    def forward(self, x):
        return self.layers(x)

    def act(self, state, epsilon):
        if random.random() > epsilon:
            with torch.no_grad():
                q_value = self.forward(torch.FloatTensor(state).unsqueeze(0))
            return q_value.max(1)[1].data[0]
        return random.randrange(2)


class CnnDQN(nn.Module):
    def __init__(self, n_actions):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten())
        self.head = nn.LazyLinear(n_actions)

    def forward(self, x):
        return self.head(self.features(x))

    def act(self, state, epsilon):
        if random.random() > epsilon:
            with torch.no_grad():
                q_value = self.forward(torch.FloatTensor(np.float32(state)).unsqueeze(0))
            return q_value.max(1)[1].data[0]
        return random.randrange(2)


def compute_td_loss(batch_size):
    state, action, reward, next_state, done = replay_buffer.sample(batch_size)
    q_value = model(torch.FloatTensor(state)).gather(1, torch.LongTensor(action).unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        target = torch.FloatTensor(reward) + 0.99 * model(torch.FloatTensor(next_state)).max(1)[0]
    loss = (q_value - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


class Env:
    def reset(self):
        return np.zeros(4, dtype=np.float32)

    def step(self, action):
        return np.zeros(4, dtype=np.float32), 1.0, random.random() < 0.1, {}


env = Env()
model = DQN(4, 2)
if USE_CUDA:
    model = model.cuda()
optimizer = optim.Adam(model.parameters())
replay_buffer = ReplayBuffer(1000)
losses = []
state = env.reset()
for frame_idx in range(1, 200):
    action = model.act(state, 0.1)
    next_state, reward, done, _ = env.step(action)
    replay_buffer.push(state, action, reward, next_state, done)
    state = env.reset() if done else next_state
    if len(replay_buffer) > 32:
        losses.append(compute_td_loss(32).item())

model = CnnDQN(2)
optimizer = optim.Adam(model.parameters())
replay_buffer = ReplayBuffer(1000)
state = env.reset()
for frame_idx in range(1, 200):
    action = model.act(state, 0.1)
    next_state, reward, done, _ = env.step(action)
    replay_buffer.push(state, action, reward, next_state, done)
    state = env.reset() if done else next_state
    if len(replay_buffer) > 32:
        losses.append(compute_td_loss(32).item())
