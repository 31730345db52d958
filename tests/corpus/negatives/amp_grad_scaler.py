# guards: TL201 TL202
"""Mixed precision with ``torch.amp.GradScaler``.

Correct: ``scaler.scale(loss).backward()`` is the backward,
``scaler.step(optimizer)`` is the optimizer step, ``scaler.update()`` follows,
and ``optimizer.zero_grad(set_to_none=True)`` runs after the step, ready
for the next iteration.
"""
import torch


def train(model, loader, optimizer, criterion, epochs, device="cuda"):
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                outputs = model(inputs)
                loss = criterion(outputs, targets)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
    return model
