# guards: TL101
"""Sampling and held-out forwards that need their graph.

REINFORCE's ``sample_episode`` returns its log-probabilities for the caller's backward, and
``select_action`` keeps them on ``self``; MAML backpropagates the query-set loss of
``x_test``; a one-off forward of the test set outside any loop (a plot) is no hazard."""
import torch
import torch.nn as nn
from torch.distributions import Categorical


def sample_episode(policy, env, steps):
    log_probs = []
    state = env.reset()
    for _ in range(steps):
        dist = Categorical(logits=policy(state))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        state = env.step(action.item())
    return torch.stack(log_probs)


class Agent:
    def __init__(self, policy):
        self.policy = policy
        self.saved_log_probs = []

    def select_action(self, state):
        dist = Categorical(logits=self.policy(state))
        action = dist.sample()
        self.saved_log_probs.append(dist.log_prob(action))
        return action.item()

    def generate_rollout(self, env, steps):
        state = env.reset()
        for _ in range(steps):
            dist = Categorical(logits=self.policy(state))
            action = dist.sample()
            self.saved_log_probs.append(dist.log_prob(action))
            state = env.step(action.item())


def maml_step(model, tasks, meta_opt, loss_fn):
    meta_opt.zero_grad()
    for x_train, y_train, x_test, y_test in tasks:
        query_loss = loss_fn(model(x_test), y_test)
        query_loss.backward()
    meta_opt.step()


net = nn.Linear(3, 1)
X_test = torch.randn(10, 3)
y_pred = net(X_test)


class SavedAction:
    def __init__(self, log_prob, value):
        self.log_prob, self.value = log_prob, value


def select_action(model, state):
    probs, state_value = model(state)
    dist = Categorical(probs)
    action = dist.sample()
    model.saved_actions.append(SavedAction(dist.log_prob(action), state_value))
    return action.item()


def run_episode(model, env, steps):
    state = env.reset()
    for _ in range(steps):
        state = env.step(select_action(model, state))
