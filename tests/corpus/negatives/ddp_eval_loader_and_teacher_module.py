# guards: TL901 TL902 TL904
"""DDP training done right, with the shapes a naive distributed rule would flag.

Correct: the training loader has a ``DistributedSampler`` whose epoch is set
through the loader (``train_loader.sampler.set_epoch(epoch)``); the
validation loader has none, and every rank evaluates the whole validation set
under ``no_grad`` (redundant, not wrong); the EMA teacher is read through
``teacher.module(x)`` under ``no_grad``, where no gradient needs averaging;
the student's forward goes through the wrapper (``student.forward(x)`` runs
DDP's own forward); the checkpoint is saved from ``student.module``.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(rank, world_size, student, teacher, train_set, val_set, epochs):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    student = DDP(student.to(rank), device_ids=[rank])
    teacher = DDP(teacher.to(rank), device_ids=[rank])
    train_loader = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set), num_workers=4)
    val_loader = DataLoader(val_set, batch_size=256, shuffle=False, num_workers=4)
    optimizer = torch.optim.AdamW(student.parameters(), lr=3e-4)
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        student.train()
        for x, y in train_loader:
            x, y = x.to(rank), y.to(rank)
            with torch.no_grad():
                target = teacher.module(x).softmax(-1)
            loss = F.cross_entropy(student.forward(x), y) + F.kl_div(student(x).log_softmax(-1), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        student.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (student(x.to(rank)).argmax(-1) == y.to(rank)).sum().item()
        if rank == 0:
            print(epoch, correct / len(val_set))
            torch.save(student.module.state_dict(), "student.pt")
    dist.destroy_process_group()
