"""TL101 where no name says "evaluation": the graph of these forwards can reach nothing.

``choose_action`` runs the Q-network at every environment step and keeps only an index;
the module-level sampling loop generates characters after training and keeps only ints."""
import torch
import torch.nn as nn


class DQN:
    def __init__(self):
        self.q_net = nn.Linear(4, 2)
        self.target = nn.Linear(4, 2)
        self.opt = torch.optim.Adam(self.q_net.parameters())

    def choose_action(self, state):
        values = self.q_net(state)  # expect: TL101
        return int(values.argmax())

    def learn(self, s, a, r, s2):
        q = self.q_net(s).gather(1, a)
        target = r + 0.9 * self.target(s2).max(1)[0].detach().unsqueeze(1)
        loss = nn.functional.mse_loss(q, target)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def run(env, agent, episodes):
    for _ in range(episodes):
        s = env.reset()
        done = False
        while not done:
            a = agent.choose_action(s)
            s2, r, done = env.step(a)
            agent.learn(s, a, r, s2)
            s = s2


model = nn.Sequential(nn.Embedding(27, 16), nn.Flatten(), nn.Linear(48, 27))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    xb = torch.randint(0, 27, (32, 3))
    yb = torch.randint(0, 27, (32,))
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()

for _ in range(20):
    out, context = [], [0, 0, 0]
    while True:
        probs = torch.softmax(model(torch.tensor([context])), dim=1)  # expect: TL101
        ix = torch.multinomial(probs, num_samples=1).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0:
            break
