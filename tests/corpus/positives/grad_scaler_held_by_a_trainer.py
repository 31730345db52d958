"""TL206 on a trainer that keeps its GradScaler and optimizer on ``self``.

``train_step`` clips before unscaling; ``finetune_step`` steps the
optimizer itself after a scaled backward; ``fit`` steps through the scaler
but never updates it, so its second iteration raises.
"""
import torch


class Trainer:
    def __init__(self, model, lr=1e-4):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda")

    def train_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: TL206
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.item()

    def finetune_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.optimizer.step()  # expect: TL206
        return loss.item()

    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)  # expect: TL206
