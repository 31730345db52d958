# guards: TL101 TL201 TL202
"""Hugging Face Accelerate loop: ``accelerator.backward(loss)``.

Correct: ``accelerator.backward`` replaces ``loss.backward()``; the loop
then calls ``optimizer.step()``, ``lr_scheduler.step()`` and
``optimizer.zero_grad()``, in that order, so gradients are cleared after the
step (before the next backward).  Evaluation runs under ``torch.no_grad()``.
"""
import torch
from accelerate import Accelerator


def training_function(model, optimizer, train_dataloader, eval_dataloader, lr_scheduler, num_epochs, metric):
    accelerator = Accelerator()
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
    )
    for epoch in range(num_epochs):
        model.train()
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()

        model.eval()
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
            metric.add_batch(predictions=predictions, references=references)
        eval_metric = metric.compute()
        accelerator.print(f"epoch {epoch}:", eval_metric)
