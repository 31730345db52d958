# guards: TL405
"""Two training steps that update through D(G(z)) on purpose.

Correct: a combined objective backpropagated once and stepped by both
optimizers (gradient reversal inside the discriminator's input layer), and
DDPG's actor step through the critic (``actor`` is not a generator).
"""
import torch
import torch.nn.functional as F


def combined_step(G, D, opt_G, opt_D, real, z):
    fake = G(z)
    d_loss = F.softplus(D(fake)).mean() + F.softplus(-D(real)).mean()
    opt_G.zero_grad()
    opt_D.zero_grad()
    d_loss.backward()
    opt_D.step()
    opt_G.step()


def ddpg_update(actor, critic, actor_optimizer, critic_optimizer, state, action, target_q):
    critic_loss = F.mse_loss(critic(state, action), target_q)
    critic_optimizer.zero_grad()
    critic_loss.backward()
    critic_optimizer.step()
    actor_loss = -critic(state, actor(state)).mean()
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()
