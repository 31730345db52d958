# guards: TL301
"""Micro-batched encoding inside model code: the chunks are concatenated and returned,
so their graph is the caller's output (needed when the autoencoder trains)."""
import torch
from torch import nn


class Autoencoder(nn.Module):
    def _encode(self, x):
        enc = []
        num_batches = max(x.shape[2] // self.frame_batch_size, 1)
        for i in range(num_batches):
            chunk = x[:, :, i * self.frame_batch_size:(i + 1) * self.frame_batch_size]
            chunk = self.encoder(chunk)
            enc.append(chunk)
        enc = torch.cat(enc, dim=2)
        return enc


def batched_forward(model, data, batch_size):
    out_list = []
    for start in range(0, data.shape[0], batch_size):
        out_list.append(model(data[start:start + batch_size]))
    return torch.cat(out_list)
