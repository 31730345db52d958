"""Old reinforcement-learning code: ``Variable`` behind a lambda and a renamed import.

The lambda hands every argument on to ``autograd.Variable`` (moving the
result to the GPU when there is one), so ``volatile=True`` reaches it and is
ignored as always since 0.4; the same holds for ``Variable`` imported as
``V``. Both action selections still record a graph.
"""
import torch
from torch import autograd
from torch.autograd import Variable as V

USE_CUDA = torch.cuda.is_available()
Variable = lambda *args, **kwargs: autograd.Variable(*args, **kwargs).cuda() if USE_CUDA else autograd.Variable(*args, **kwargs)


class Agent:
    def __init__(self, q_net, num_actions):
        self.q_net = q_net
        self.num_actions = num_actions

    def act(self, state):
        state = Variable(torch.FloatTensor(state).unsqueeze(0), volatile=True)  # expect: TL105
        q_value = self.q_net(state)
        return q_value.max(1)[1].item()

    def act_greedy(self, state):
        state = V(torch.FloatTensor(state).unsqueeze(0), volatile=True)  # expect: TL105
        return self.q_net(state).argmax(1).item()
