# guards: TL301
"""A helper returns (python float, differentiable surrogate); only the float is summed."""
import torch


class Elbo:
    def _loss_particle(self, model_trace, guide_trace):
        elbo = 0.0
        surrogate = 0.0
        for site in model_trace:
            elbo = elbo + site.log_prob_sum().item()
            surrogate = surrogate + site.score_parts()
        return -elbo, -surrogate

    def loss_and_grads(self, model, guide, loader):
        loss = 0.0
        for model_trace, guide_trace in self._traces(model, guide, loader):
            loss_particle, surrogate_particle = self._loss_particle(model_trace, guide_trace)
            loss += loss_particle / self.num_particles
            surrogate_particle.backward()
        return loss
