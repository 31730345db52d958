# guards: TL101 TL103 TL301
"""REINFORCE in the minimalRL style: the rollout hands ``prob[a]`` to ``put_data``.

Correct: the episode loop runs the policy with grad on purpose. Each step's
probability (which carries the policy's graph) goes into ``self.data`` through
``put_data``; ``train_net`` later builds ``-log(prob) * G`` from those stored
tensors and calls ``backward()``. The rollout is training, not evaluation:
wrapping it in ``no_grad`` would leave ``train_net`` nothing to differentiate.
"""
import gymnasium as gym
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

learning_rate = 0.0002
gamma = 0.98


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.data = []
        self.fc1 = nn.Linear(4, 128)
        self.fc2 = nn.Linear(128, 2)
        self.optimizer = optim.Adam(self.parameters(), lr=learning_rate)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return F.softmax(self.fc2(x), dim=0)

    def put_data(self, item):
        self.data.append(item)

    def train_net(self):
        R = 0
        self.optimizer.zero_grad()
        for r, prob in self.data[::-1]:
            R = r + gamma * R
            loss = -torch.log(prob) * R
            loss.backward()
        self.optimizer.step()
        self.data = []


def main():
    env = gym.make("CartPole-v1")
    pi = Policy()
    score = 0.0
    for n_epi in range(10000):
        s, _ = env.reset()
        done = False
        while not done:
            prob = pi(torch.from_numpy(s).float())
            m = Categorical(prob)
            a = m.sample()
            s_prime, r, terminated, truncated, _ = env.step(a.item())
            done = terminated or truncated
            pi.put_data((r, prob[a]))
            s = s_prime
            score += r
        pi.train_net()
        if n_epi % 20 == 0 and n_epi != 0:
            print(f"episode {n_epi}: avg score {score / 20:.1f}")
            score = 0.0
    env.close()


if __name__ == "__main__":
    main()
