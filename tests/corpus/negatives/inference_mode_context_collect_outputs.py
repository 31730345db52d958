# guards: TL101 TL301
"""Inference under ``with torch.inference_mode():`` collecting raw outputs.

Correct: tensors produced under inference mode have no autograd history, so
appending the model outputs to ``all_outputs`` across the loop over
``test_loader`` keeps no graph alive.
"""
import torch


def run_inference(model, test_loader, device):
    model.eval()
    all_outputs = []
    all_ids = []
    with torch.inference_mode():
        for batch in test_loader:
            input_ids = batch["input_ids"].to(device)
            attention_mask = batch["attention_mask"].to(device)
            outputs = model(input_ids=input_ids, attention_mask=attention_mask)
            all_outputs.append(outputs.logits)
            all_ids.extend(batch["id"])
    return all_ids, torch.cat(all_outputs)
