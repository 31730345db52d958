"""TL101 with a Hugging Face style call ``model(**batch)`` in an eval loop.

The loop over ``eval_dataloader`` after ``model.eval()`` is missing
``torch.no_grad()``.  Predictions are handed to the metric right away, so
nothing is kept across iterations.
"""


def evaluate(model, eval_dataloader, metric, device):
    model.eval()
    for batch in eval_dataloader:
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)  # expect: TL101
        predictions = outputs.logits.argmax(dim=-1)
        metric.add_batch(predictions=predictions, references=batch["labels"])
    return metric.compute()
