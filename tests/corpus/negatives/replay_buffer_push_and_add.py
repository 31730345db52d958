# guards: TL304 TL301
"""DQN with a replay buffer (``push``) and a prioritized buffer (``add``).

Correct: a replay buffer keeps whole transitions in a deque or list; it sums
nothing. What the agent pushes is a chosen action (an index read off the
Q-values with ``max(1)[1]``, or by the network's own ``act`` method, which
returns ``argmax``), the environment's reward and states: no value that
carries a graph. The buffers hold tuples, not a
running sum of losses, so they are no meters.
"""
import random
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class ReplayMemory:
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class PrioritizedBuffer:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = []
        self.priorities = np.zeros(capacity, dtype=np.float32)
        self.pos = 0

    def add(self, state, action, reward, next_state, done):
        max_prio = self.priorities.max() if self.data else 1.0
        if len(self.data) < self.capacity:
            self.data.append((state, action, reward, next_state, done))
        else:
            self.data[self.pos] = (state, action, reward, next_state, done)
        self.priorities[self.pos] = max_prio
        self.pos = (self.pos + 1) % self.capacity


class DQN(nn.Module):
    def __init__(self, n_obs, n_actions):
        super().__init__()
        self.layer1 = nn.Linear(n_obs, 128)
        self.layer2 = nn.Linear(128, n_actions)

    def forward(self, x):
        return self.layer2(F.relu(self.layer1(x)))

    def act(self, x):
        return self(x).argmax(dim=1, keepdim=True)


def select_action(policy_net, state, eps, n_actions):
    if random.random() > eps:
        with torch.no_grad():
            return policy_net(state).max(1)[1].view(1, 1)
    return torch.tensor([[random.randrange(n_actions)]], dtype=torch.long)


def optimize(policy_net, target_net, memory, optimizer, batch_size=128, gamma=0.99):
    if len(memory) < batch_size:
        return
    batch = Transition(*zip(*memory.sample(batch_size)))
    state_batch = torch.cat(batch.state)
    action_batch = torch.cat(batch.action)
    reward_batch = torch.cat(batch.reward)
    next_states = torch.cat(batch.next_state)
    q = policy_net(state_batch).gather(1, action_batch)
    with torch.no_grad():
        next_q = target_net(next_states).max(1)[0]
    loss = F.smooth_l1_loss(q, (reward_batch + gamma * next_q).unsqueeze(1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def train(env, episodes=500, n_obs=4, n_actions=2):
    policy_net, target_net = DQN(n_obs, n_actions), DQN(n_obs, n_actions)
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = torch.optim.AdamW(policy_net.parameters(), lr=1e-4)
    memory = ReplayMemory(10000)
    prioritized = PrioritizedBuffer(10000)
    for episode in range(episodes):
        obs, _ = env.reset()
        state = torch.tensor(obs, dtype=torch.float32).unsqueeze(0)
        done = False
        while not done:
            action = select_action(policy_net, state, 0.1, n_actions)
            obs, r, terminated, truncated, _ = env.step(action.item())
            reward = torch.tensor([r])
            next_state = torch.tensor(obs, dtype=torch.float32).unsqueeze(0)
            memory.push(state, action, next_state, reward)
            greedy = policy_net.act(state)
            prioritized.add(state, greedy, reward, next_state, terminated)
            state = next_state
            done = terminated or truncated
            optimize(policy_net, target_net, memory, optimizer)
