"""TL101 without a loop: one forward pass after ``model.eval()``.

``report`` (an ordinary function in an ordinary module, not a unit test)
puts the model in eval mode and runs it on the whole test set with autograd
enabled; the graph over the full test set is built for nothing.
"""
import torch


def report(model, x_test, y_test):
    model.eval()
    logits = model(x_test)  # expect: TL101
    acc = (logits.argmax(dim=1) == y_test).float().mean().item()
    print(f"test accuracy: {acc:.3f}")
    return acc


def save_report(model, x_test, y_test, path):
    acc = report(model, x_test, y_test)
    torch.save({"acc": acc}, path)
