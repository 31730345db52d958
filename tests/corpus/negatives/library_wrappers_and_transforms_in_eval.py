# guards: TL101
"""Objects that are not raw forward passes: an ultralytics YOLO wrapper (its __call__
predicts under its own inference mode) and a botorch-style outcome transform put in
eval mode to re-transform stored targets."""
import cv2
import torch
from torch import nn
from ultralytics import YOLO


class StreamlitInference:
    def __init__(self, model_path, files):
        self.model = None
        self.model_path = model_path
        self.files = files

    def configure(self):
        self.model = YOLO(self.model_path)

    def image_inference(self):
        shown = []
        for path in self.files:
            image = cv2.imread(path)
            results = self.model(image, conf=0.25)
            shown.append(results[0].plot())
        return shown


class GPModel(nn.Module):
    def __init__(self, outcome_transform):
        super().__init__()
        self.outcome_transform = outcome_transform

    def load_state_dict(self, state_dict, strict=True):
        super().load_state_dict(state_dict, strict=strict)
        self.outcome_transform.eval()
        retransformed_y, _ = self.outcome_transform(Y=state_dict["train_targets"])
        self.train_targets = retransformed_y
