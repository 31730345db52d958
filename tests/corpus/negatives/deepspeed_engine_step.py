# guards: TL201
"""DeepSpeed training loop: the engine owns backward, step and zero_grad.

Correct: ``model_engine.backward(loss)`` and ``model_engine.step()`` handle
loss scaling, gradient accumulation and clearing gradients internally; there
is no ``optimizer.step()`` in the loop and nothing to zero by hand.
"""
import deepspeed
import torch.nn.functional as F


def train(args, model, train_dataset, epochs):
    model_engine, optimizer, train_loader, _ = deepspeed.initialize(
        args=args, model=model, model_parameters=model.parameters(), training_data=train_dataset
    )
    for epoch in range(epochs):
        for step, (inputs, labels) in enumerate(train_loader):
            inputs = inputs.to(model_engine.local_rank)
            labels = labels.to(model_engine.local_rank)
            outputs = model_engine(inputs)
            loss = F.cross_entropy(outputs, labels)
            model_engine.backward(loss)
            model_engine.step()
            if step % 100 == 0 and model_engine.global_rank == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    return model_engine
