# guards: TL101
"""Rollouts whose acting forward is bound to a name and some later read keeps its graph.

Correct: each loop runs the policy with grad on because what it computes reaches a
backward later. REINFORCE stores ``prob[a]`` (a tensor) or ``m.log_prob(a)``; the
actor-critic keeps ``value``; PPO stores ``prob[a]`` unconverted; DDPG puts the action
tensor itself into its memory; a distribution's ``entropy`` and ``rsample`` carry the
graph; a name read again in the next iteration, after a ``break``, or after the loop holds
the last forward's graph; ``act`` keeps its log-probabilities on the agent; and the
forwards already under ``no_grad`` record nothing."""
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical, Normal


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.data = []
        self.saved_log_probs = []
        self.fc1 = nn.Linear(4, 128)
        self.fc_pi = nn.Linear(128, 2)
        self.fc_v = nn.Linear(128, 1)
        self.optimizer = optim.Adam(self.parameters(), lr=0.0002)

    def pi(self, x):
        return F.softmax(self.fc_pi(F.relu(self.fc1(x))), dim=-1)

    def v(self, x):
        return self.fc_v(F.relu(self.fc1(x)))

    def act(self, x):
        m = Categorical(self.pi(x))
        a = m.sample()
        self.saved_log_probs.append(m.log_prob(a))
        return a

    def put_data(self, item):
        self.data.append(item)

    def train_net(self):
        loss = 0
        for r, prob in self.data[::-1]:
            loss = loss - torch.log(prob) * r
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.data = []


class MuNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return torch.tanh(self.fc(x)) * 2


def reinforce():
    env, pi = gym.make("CartPole-v1"), Policy()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            prob = pi.pi(torch.from_numpy(s).float())
            m = Categorical(prob)
            a = m.sample()
            s, r, done, truncated, info = env.step(a.item())
            pi.put_data((r, prob[a]))
        pi.train_net()


def reinforce_log_prob():
    env, pi = gym.make("CartPole-v1"), Policy()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            prob = pi.pi(torch.from_numpy(s).float())
            m = Categorical(prob)
            a = m.sample().item()
            s, r, done, truncated, info = env.step(a)
            pi.put_data((r, m.log_prob(torch.tensor(a)).exp()))
        pi.train_net()


def actor_critic_keeps_value():
    env, model = gym.make("CartPole-v1"), Policy()
    values = []
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            value = model.v(torch.from_numpy(s).float())
            print(value.item())
            values.append(value)
            prob = model.pi(torch.from_numpy(s).float())
            m = Categorical(prob)
            a = m.sample().item()
            entropy = m.entropy()
            s, r, done, truncated, info = env.step(a)
            model.put_data((r, entropy))
        torch.stack(values).sum().backward()


def ppo_stores_prob_tensor():
    env, model = gym.make("CartPole-v1"), Policy()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            prob = model.pi(torch.from_numpy(s).float())
            a = Categorical(prob).sample().item()
            s_prime, r, done, truncated, info = env.step(a)
            model.put_data((r, prob[a]))
            s = s_prime
        model.train_net()


def ddpg_stores_action_tensor():
    env, memory = gym.make("Pendulum-v1"), []
    mu = MuNet()
    optimizer = optim.Adam(mu.parameters())
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            a = mu(torch.from_numpy(s).float())
            s, r, done, truncated, info = env.step([a.item()])
            memory.append((s, a, r))
        loss = -sum(a for _, a, _ in memory).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def ddpg_rsample_and_carry():
    env, memory = gym.make("Pendulum-v1"), []
    mu = MuNet()
    prev = None
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        for t in range(200):
            if t > 0:
                memory.append(prev)
            prev = mu(torch.from_numpy(s).float())
            s, r, done, truncated, info = env.step([prev.item()])
            dist = Normal(mu(torch.from_numpy(s).float()), 0.1)
            memory.append(dist.rsample())
        a = mu(torch.from_numpy(s).float())
        for t in range(200):
            a = mu(torch.from_numpy(s).float())
            if done:
                break
            a = a.item()
        memory.append(a)
    torch.stack(memory).sum().backward()


def act_keeps_log_probs():
    env, agent = gym.make("CartPole-v1"), Policy()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            a = agent.act(torch.from_numpy(s).float())
            s, r, done, truncated, info = env.step(a.item())
        loss = -torch.stack(agent.saved_log_probs).sum()
        loss.backward()


def loss_from_the_forward():
    model = Policy()
    for step in range(100):
        q = model.v(torch.randn(4))
        print(q.item())
        loss = (q - 1.0).pow(2).mean()
        loss.backward()


def acting_under_no_grad():
    env, model = gym.make("CartPole-v1"), Policy()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            with torch.no_grad():
                prob = model.pi(torch.from_numpy(s).float())
            a = Categorical(prob).sample().item()
            s, r, done, truncated, info = env.step(a)
            model.put_data((r, prob[a].item()))
        model.train_net()


if __name__ == "__main__":
    reinforce()
    reinforce_log_prob()
    actor_critic_keeps_value()
    ppo_stores_prob_tensor()
    ddpg_stores_action_tensor()
    ddpg_rsample_and_carry()
    act_keeps_log_probs()
    loss_from_the_forward()
    acting_under_no_grad()
