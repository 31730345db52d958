# guards: TL101
"""Reinforcement learning whose forwards feed a loss, or run without grad already.

``act`` takes its argmax under ``no_grad``; Double DQN's online argmax stays a tensor that
picks the target network's values for the loss; REINFORCE and the critic keep what the
forward returns for a backward; the adapting wrapper's forward backpropagates itself, so
reading numbers off it still needs gradients."""
import gym
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

env = gym.make("CartPole-v1")
online = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
target = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
policy = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
critic = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam([*online.parameters(), *policy.parameters(), *critic.parameters()])


def act(obs):
    with torch.no_grad():
        return online(torch.as_tensor(obs).float()).argmax().item()


def double_dqn_update(s, a, r, s2, d):
    next_a = online(s2).argmax(1, keepdim=True)
    next_q = target(s2).gather(1, next_a).squeeze(1).detach()
    q_sa = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    loss = F.smooth_l1_loss(q_sa, r + 0.99 * next_q * (1 - d))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


class Adapting(nn.Module):
    """Test-time adaptation: every forward takes an entropy step on its own output."""

    def __init__(self, model, optimizer):
        super().__init__()
        self.model, self.optimizer = model, optimizer

    def forward(self, x):
        out = self.model(x)
        entropy = -(out.softmax(-1) * out.log_softmax(-1)).sum(-1).mean()
        self.optimizer.zero_grad()
        entropy.backward()
        self.optimizer.step()
        return out


adapting = Adapting(policy, opt)

for episode in range(200):
    obs, _ = env.reset()
    log_probs, values, rewards, done = [], [], [], False
    while not done:
        state = torch.as_tensor(obs).float()
        dist = Categorical(logits=policy(state))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        values.append(critic(state))
        obs, r, term, trunc, _ = env.step(action.item())
        rewards.append(r)
        done = term or trunc
        greedy = act(obs)
        shifted = adapting(torch.as_tensor(obs).float()).argmax().item()
    returns = torch.tensor([sum(rewards[i:]) for i in range(len(rewards))])
    advantage = returns - torch.cat(values).squeeze(-1)
    loss = -(torch.stack(log_probs) * advantage.detach()).sum() + advantage.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
