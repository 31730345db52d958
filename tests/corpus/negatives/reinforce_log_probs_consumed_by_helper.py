# guards: TL301
"""REINFORCE as in pytorch/examples: the episode loop stores log-probabilities
on the policy, and ``finish_episode`` (a helper of the same file) sums them
into the loss it backpropagates, then empties the list.

Correct: the stored graphs are what the policy-gradient backward needs.
"""
import torch
from torch.distributions import Categorical


def finish_episode(policy, optimizer, gamma=0.99):
    returns, R = [], 0.0
    for r in reversed(policy.rewards):
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns)]
    optimizer.zero_grad()
    torch.stack(policy_loss).sum().backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def main(policy, env, optimizer, episodes):
    for episode in range(episodes):
        state, done = env.reset(), False
        while not done:
            m = Categorical(policy(state))
            action = m.sample()
            policy.saved_log_probs.append(m.log_prob(action))
            state, reward, done = env.step(action.item())
            policy.rewards.append(reward)
        finish_episode(policy, optimizer)
