# guards: TL101
"""A model method that switches to eval mode and returns the forward's result:
callers (acquisition optimisers) differentiate through it, so it must keep the graph."""
import torch
from torch import nn


class GPModel(nn.Module):
    def posterior(self, X):
        self.eval()
        X = self.transform_inputs(X)
        mvn = self(X)
        posterior = self.wrap(distribution=mvn)
        return posterior

    def predict_mean(self, X):
        self.eval()
        return self(X).mean
