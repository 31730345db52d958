# guards: TL106
"""A Trainer's evaluation hook and a predictor that caches state on ``self``.

Correct, and left alone by the opt-in TL106 too: ``prediction_step`` feeds
a training run's metrics, and ``predict`` stores a tensor on ``self`` that
later code updates in place, which inference tensors do not allow.
"""
import torch


class DistillTrainer:
    def prediction_step(self, model, inputs):
        with torch.no_grad():
            return model(**inputs).logits


class StreamingPredictor:
    def __init__(self, model):
        self.model = model
        self.state = None

    @torch.no_grad()
    def predict(self, frame):
        out, self.state = self.model(frame, self.state)
        return out
