# guards: TL301
"""Advantage actor-critic: values/log-probs collected over a rollout, one update.

Correct: ``values``, ``log_probs`` and ``entropies`` are re-created at the
start of every update; the inner rollout loop appends graph-carrying tensors
(``critic(state)``, ``dist.log_prob(action)``) on purpose because the single
``loss.backward()`` after the rollout needs their graphs.  The rollout loop
contains no backward or step, and after the update the lists are rebound, so
no graph survives into the next update.
"""
import torch
import torch.nn.functional as F
from torch.distributions import Categorical


def train(actor, critic, env, optimizer, num_updates, n_steps=128, gamma=0.99, device="cpu"):
    state, _ = env.reset()
    for update in range(num_updates):
        values, log_probs, entropies, rewards, masks = [], [], [], [], []
        for step in range(n_steps):
            s = torch.as_tensor(state, dtype=torch.float32, device=device).unsqueeze(0)
            dist = Categorical(logits=actor(s))
            action = dist.sample()
            values.append(critic(s))
            log_probs.append(dist.log_prob(action))
            entropies.append(dist.entropy())
            state, reward, terminated, truncated, _ = env.step(action.item())
            rewards.append(reward)
            masks.append(0.0 if (terminated or truncated) else 1.0)
            if terminated or truncated:
                state, _ = env.reset()

        with torch.no_grad():
            next_value = critic(torch.as_tensor(state, dtype=torch.float32, device=device).unsqueeze(0))
        returns = []
        R = next_value
        for r, m in zip(reversed(rewards), reversed(masks)):
            R = r + gamma * R * m
            returns.insert(0, R)

        returns = torch.cat(returns).squeeze(-1)
        values = torch.cat(values).squeeze(-1)
        log_probs = torch.cat(log_probs)
        advantages = returns - values.detach()

        actor_loss = -(log_probs * advantages).mean()
        critic_loss = F.mse_loss(values, returns)
        entropy = torch.cat(entropies).mean()
        loss = actor_loss + 0.5 * critic_loss - 0.01 * entropy

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"update {update}: loss {loss.item():.3f}")
