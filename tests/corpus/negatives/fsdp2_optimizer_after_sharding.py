# guards: TL903 TL904
"""FSDP2 training in the order torch documents, beside a frozen teacher.

Correct: the student is sharded block by block and then whole before its
optimizer is built; the teacher's optimizer (an unsharded model) may come
first; the forward goes through the module itself (``model(x)``), which runs
FSDP's hooks; ``model.forward`` is called only on the unsharded teacher.
"""
import torch
from torch.distributed.fsdp import fully_shard


def setup_and_train(model, teacher, batches):
    teacher_optimizer = torch.optim.SGD(teacher.parameters(), lr=0.01)
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for x, y in batches:
        optimizer.zero_grad()
        teacher_optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y) + teacher.forward(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        teacher_optimizer.step()
