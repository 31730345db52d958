# guards: TL303
"""A recurrent policy: the rollout carries the LSTM state under no_grad and
resets it at episode ends; the update re-runs the sequence from a stored
state. Text generation carries the hidden state under no_grad as well.
Transformer-XL style memories come back detached from the model itself."""
import torch
import torch.nn.functional as F
from torch.distributions import Categorical


def collect(policy, env, steps):
    obs = env.reset()
    hidden = policy.initial_state()
    transitions = []
    with torch.no_grad():
        for _ in range(steps):
            logits, value, hidden = policy(obs, hidden)
            action = Categorical(logits=logits).sample()
            obs, reward, done, _ = env.step(action.item())
            transitions.append((obs, action, reward, done, value.item()))
            if done:
                obs = env.reset()
                hidden = policy.initial_state()
    return transitions


def update(policy, optimizer, batches):
    for obs, actions, returns, start_state in batches:
        hidden = start_state
        logits, values, hidden = policy(obs, hidden)
        dist = Categorical(logits=logits)
        loss = -(dist.log_prob(actions) * (returns - values.detach())).mean() + F.mse_loss(values, returns)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def generate(model, start_token, length, temperature=1.0):
    hidden = model.init_hidden(1)
    inp = start_token
    words = []
    for _ in range(length):
        output, hidden = model(inp, hidden)
        weights = output.squeeze().div(temperature).exp()
        inp = torch.multinomial(weights, 1)[0]
        words.append(inp.item())
    return words


def train_xl(para_model, train_iter, optimizer):
    mems = tuple()
    for batch, (data, target, seq_len) in enumerate(train_iter):
        para_model.zero_grad()
        ret = para_model(data, target, *mems)
        loss, mems = ret[0], ret[1:]
        loss = loss.float().mean()
        loss.backward()
        optimizer.step()
