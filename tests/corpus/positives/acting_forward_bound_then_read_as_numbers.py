"""TL101 where an acting forward is bound to a name and reaches only numbers over several
statements, in the minimalRL style.

The actor-critic and PPO rollouts bind ``prob = model.pi(s)``, hand it to ``Categorical``
only to draw an action (``m.sample().item()``), and store ``prob[a].item()``, a float; the
DDPG rollout reads ``a = mu(s)`` back as ``a.item()`` in the very next statement, rebinding
``a`` to the float it stores. ``train_net`` and ``train`` recompute everything from the
stored numbers, so the graph of every acting forward is built and dropped at each step."""
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class PPO(nn.Module):
    def __init__(self):
        super().__init__()
        self.data = []
        self.fc1 = nn.Linear(4, 256)
        self.fc_pi = nn.Linear(256, 2)
        self.fc_v = nn.Linear(256, 1)
        self.optimizer = optim.Adam(self.parameters(), lr=0.0005)

    def pi(self, x, softmax_dim=0):
        x = F.relu(self.fc1(x))
        return F.softmax(self.fc_pi(x), dim=softmax_dim)

    def v(self, x):
        return self.fc_v(F.relu(self.fc1(x)))

    def put_data(self, transition):
        self.data.append(transition)

    def train_net(self):
        s = torch.tensor(np.array([t[0] for t in self.data]), dtype=torch.float)
        a = torch.tensor([[t[1]] for t in self.data])
        prob_old = torch.tensor([[t[4]] for t in self.data])
        ratio = self.pi(s, softmax_dim=1).gather(1, a) / prob_old
        loss = -ratio.mean() + F.smooth_l1_loss(self.v(s), torch.zeros(len(self.data), 1))
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.data = []


class MuNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        mu = torch.tanh(self.fc(x)) * 2
        return mu


def train(mu, q, memory, optimizer):
    s = torch.tensor(np.array([t[0] for t in memory]), dtype=torch.float)
    loss = -q(torch.cat([s, mu(s)], dim=1)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def ppo_main():
    env = gym.make("CartPole-v1")
    model = PPO()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            for t in range(20):
                prob = model.pi(torch.from_numpy(s).float())  # expect: TL101
                m = Categorical(prob)
                a = m.sample().item()
                s_prime, r, done, truncated, info = env.step(a)
                model.put_data((s, a, r / 100.0, s_prime, prob[a].item(), done))
                s = s_prime
                if done:
                    break
            model.train_net()


def actor_critic_main():
    env = gym.make("CartPole-v1")
    model = PPO()
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            prob = model.pi(torch.from_numpy(s).float())  # expect: TL101
            a = Categorical(probs=prob).sample().item()
            s_prime, r, done, truncated, info = env.step(a)
            model.put_data((s, a, r, s_prime, done))
            s = s_prime
        model.train_net()


def ddpg_main():
    env = gym.make("Pendulum-v1")
    memory = []
    mu, mu_target = MuNet(), MuNet()
    q = nn.Linear(4, 1)
    optimizer = optim.Adam(mu.parameters(), lr=0.0005)
    for n_epi in range(1000):
        s, _ = env.reset()
        done = False
        while not done:
            a = mu(torch.from_numpy(s).float())  # expect: TL101
            a = a.item() + np.random.normal()
            s_prime, r, done, truncated, info = env.step([a])
            memory.append((s, a, r / 100.0, s_prime, done))
            s = s_prime
        if len(memory) > 2000:
            train(mu, q, memory, optimizer)


if __name__ == "__main__":
    ppo_main()
    actor_critic_main()
    ddpg_main()
