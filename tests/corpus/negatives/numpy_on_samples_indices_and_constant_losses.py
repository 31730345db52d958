# guards: TL402
"""An actor-critic script that turns samples, indices and data-only losses into numpy.

Correct: ``Categorical(...).sample()`` draws integers and never requires
grad; ``argmax``, ``max(...)[1]`` and ``topk(...).indices`` are integer
positions; ``greedy``, a method of the model that runs it without grad and
returns ``argmax``, hands back an index too; and an error computed between tensors that come from the environment
and the replay buffer (no parameter in sight) has no graph. ``.numpy()`` on
any of them cannot raise.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical


class ActorCritic(nn.Module):
    def __init__(self, n_obs, n_actions):
        super().__init__()
        self.body = nn.Linear(n_obs, 64)
        self.pi = nn.Linear(64, n_actions)
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = torch.tanh(self.body(x))
        return self.pi(h), self.v(h)

    @torch.no_grad()
    def greedy(self, x):
        logits, _ = self(x)
        return logits.argmax(dim=-1)


model = ActorCritic(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
obs = torch.randn(16, 4)
rewards = torch.randn(16)
baseline = torch.zeros(16)
history = []

for update in range(100):
    logits, value = model(obs)
    dist = Categorical(logits=logits)
    actions = dist.sample()
    print("actions", actions.numpy())
    best = logits.argmax(dim=-1)
    second = torch.max(logits, 1)[1]
    top = logits.topk(2, dim=-1).indices
    chosen = model.greedy(obs)
    print(best.numpy(), second.numpy(), top.numpy(), chosen.numpy())
    td_error = F.mse_loss(rewards, baseline)
    print("reward error", td_error.numpy())
    loss = -(dist.log_prob(actions) * (rewards - value.squeeze(-1).detach())).mean() \
        + F.mse_loss(value.squeeze(-1), rewards)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    baseline = 0.9 * baseline + 0.1 * rewards
    history.append(actions.numpy())
