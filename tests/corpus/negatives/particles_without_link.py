# guards: TL301 TL302
"""Per-particle backward in an ELBO estimate: no optimizer step in the loop and no
tensor carried between iterations, so nothing accumulates; particles may share
upstream graph the linter cannot see, which is what retain_graph keeps."""


def loss_and_grads(self, model, guide, *args):
    elbo = 0.0
    for model_trace, guide_trace in self._get_traces(model, guide, args):
        elbo_particle = self._compute_elbo(model_trace, guide_trace)
        elbo += elbo_particle.item() / self.num_particles
        if elbo_particle.requires_grad:
            loss_particle = -elbo_particle
            (loss_particle / self.num_particles).backward(retain_graph=True)
    return -elbo
