# guards: TL101 TL301
"""Batch prediction decorated with ``@torch.inference_mode()``.

Correct: ``inference_mode`` is a stricter ``no_grad``; every forward pass in
``predict`` (a loop over ``test_loader`` after ``model.eval()``) runs without
autograd, so collecting the outputs in a list keeps no graph alive.
"""
import torch


@torch.inference_mode()
def predict(model, test_loader, device="cuda"):
    model.eval()
    predictions = []
    for batch in test_loader:
        inputs = batch["pixel_values"].to(device)
        outputs = model(inputs)
        predictions.append(outputs.softmax(dim=-1).cpu())
    return torch.cat(predictions)
