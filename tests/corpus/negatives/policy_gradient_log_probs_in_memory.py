# guards: TL101 TL103 TL301
"""A policy-gradient agent whose rollout stores log-probs in a memory object.

Correct: ``collect`` runs the policy with grad on purpose and appends every
``log_prob`` (a graph-carrying tensor) to ``memory``; ``update`` sums
``-log_prob * return`` over the stored tensors and calls ``backward()``.
``collect`` is half of a training step, not an evaluation pass, even though it
neither calls backward nor steps itself.
"""
import torch
import torch.nn as nn
from torch.distributions import Categorical


class Memory:
    def __init__(self):
        self.log_probs = []
        self.rewards = []

    def clear(self):
        self.log_probs.clear()
        self.rewards.clear()


class Actor(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_actions))

    def forward(self, obs):
        return Categorical(logits=self.net(obs))


def collect(actor, env, memory, steps):
    obs, _ = env.reset()
    log_probs = memory.log_probs
    for _ in range(steps):
        dist = actor(torch.as_tensor(obs, dtype=torch.float32))
        action = dist.sample()
        log_prob = dist.log_prob(action)
        log_probs.append(log_prob)
        obs, reward, terminated, truncated, _ = env.step(action.item())
        memory.rewards.append(reward)
        if terminated or truncated:
            obs, _ = env.reset()


def update(memory, optimizer, gamma=0.99):
    returns, running = [], 0.0
    for reward in reversed(memory.rewards):
        running = reward + gamma * running
        returns.insert(0, running)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = torch.stack([-lp * ret for lp, ret in zip(memory.log_probs, returns)]).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    memory.clear()


def train(env, epochs=100):
    actor = Actor(4, 2)
    optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
    memory = Memory()
    for _ in range(epochs):
        collect(actor, env, memory, steps=200)
        update(memory, optimizer)
