# guards: TL205 TL206
"""Mixed precision that can be switched off: a scaler or ``None``.

Correct: the scaled path unscales before it clips and steps through the
scaler; the plain path clips and calls ``optimizer.step()`` itself. The two
``if self.scaler is not None`` tests are the same condition, so the plain
``optimizer.step()`` never follows a scaled backward, and the clip after the
``if`` always sees unscaled gradients.
"""
import torch
from torch.nn.utils import clip_grad_norm_


class Trainer:
    def __init__(self, model, optimizer, use_amp):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.cuda.amp.GradScaler() if use_amp else None

    def train_epoch(self, loader, criterion, max_norm=1.0):
        for x, y in loader:
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", enabled=self.scaler is not None):
                loss = criterion(self.model(x), y)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
                self.scaler.unscale_(self.optimizer)
            else:
                loss.backward()
            clip_grad_norm_(self.model.parameters(), max_norm)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
