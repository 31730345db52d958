"""FSDP (the FullyShardedDataParallel wrapper) misused twice.

The optimizer is built from the model before FSDP wraps it, and the training
forward goes through ``model.module``, around the wrapper.
"""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main(rank, world_size, net, batches):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)  # expect: TL903
    model = FSDP(net.to(rank), device_id=rank)
    for x, y in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model.module(x.to(rank)), y.to(rank))  # expect: TL904
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()
