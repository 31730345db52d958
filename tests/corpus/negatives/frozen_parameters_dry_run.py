# guards: TL101
"""Export: every parameter is frozen before the dry run, so the forward records nothing."""
import torch


def export(model, im):
    for p in model.parameters():
        p.requires_grad = False
    model.eval()
    for _ in range(2):
        y = model(im)  # dry runs
    torch.onnx.export(model, im, "model.onnx")
    return y.shape
