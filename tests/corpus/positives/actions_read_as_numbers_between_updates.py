"""TL101 where a forward's output only becomes numbers, also between the updates of training.

The DQN loop picks its action with ``q(obs).argmax().item()`` at every environment step
inside the loop that also trains; the actor-critic's ``train_step`` logs the accuracy of a
held-out probe with a helper that only reads numbers; ``evaluate_policy`` is no name of
evaluation, but every forward in it becomes an ``int``."""
import gym
import torch
import torch.nn as nn
import torch.nn.functional as F

env = gym.make("CartPole-v1")
q = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
target = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(q.parameters(), lr=1e-3)
buffer = []


def accuracy(model, x, y):
    return (model(x).argmax(1) == y).float().mean().item()  # expect: TL101


def train_step(batch, probe_x, probe_y):
    s, a, rew, s2, d = batch
    qs = q(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        tgt = rew + 0.99 * target(s2).max(1)[0] * (1 - d)
    loss = F.mse_loss(qs, tgt)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item(), accuracy(q, probe_x, probe_y)


def play(env, episodes):
    returns = []
    for _ in range(episodes):
        obs, _ = env.reset()
        total, done = 0.0, False
        while not done:
            action = int(torch.argmax(q(torch.as_tensor(obs).float())))  # expect: TL101
            obs, r, term, trunc, _ = env.step(action)
            total, done = total + r, term or trunc
        returns.append(total)
    return returns


for episode in range(300):
    obs, _ = env.reset()
    done = False
    while not done:
        action = q(torch.as_tensor(obs).float()).argmax().item()  # expect: TL101
        obs2, r, term, trunc, _ = env.step(action)
        done = term or trunc
        buffer.append((obs, action, r, obs2, float(done)))
        obs = obs2
        if len(buffer) > 64:
            batch = [torch.tensor(column) for column in zip(*buffer[-64:])]
            batch[0], batch[3] = batch[0].float(), batch[3].float()
            print(train_step(batch, batch[0], batch[1]))
print(play(env, 10))
