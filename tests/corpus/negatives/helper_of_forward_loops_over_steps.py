# guards: TL101 TL301
"""A prediction helper that a model's forward() also calls (openvla-style diffusion
head, a table-QA pipeline's sequential inference): its outputs may be trained on,
and the no_grad belongs to whoever runs the forward."""
import torch
from torch import nn


class DiffusionPolicyBase(nn.Module):
    def forward(self, embeddings, noise, scheduler):
        actions = self._run_diffusion_prediction(embeddings, noise, scheduler)
        return actions.pow(2).mean()


class DiffusionPolicy(DiffusionPolicyBase):
    def __init__(self, dim=8):
        super().__init__()
        self.denoiser = nn.Linear(dim, dim)
        self.language_model = nn.Linear(dim, dim)

    def _run_diffusion_prediction(self, embeddings, noise, scheduler):
        current = noise
        for t in scheduler.timesteps:
            hidden = self.language_model(embeddings + current * t)
            current = current - 0.1 * self.denoiser(hidden)
        return current

    def predict_action(self, embeddings, noise, scheduler):
        return self._run_diffusion_prediction(embeddings, noise, scheduler)


class TableQuestionAnsweringPipeline:
    def __init__(self, model):
        self.model = model

    def sequential_inference(self, batch):
        all_logits = []
        for index in range(batch.shape[0]):
            outputs = self.model(batch[index].unsqueeze(0))
            all_logits.append(outputs)
        return torch.cat(all_logits)

    def _forward(self, batch, sequential=True):
        if sequential:
            return self.sequential_inference(batch)
        return self.model(batch)
