# guards: TL103 TL301 TL401
"""Distillation and EMA: frozen models run under no_grad inside the training loop.

Correct for TL103: those forward passes are part of a loop that trains the
student, not an evaluation loop; whether the teacher keeps dropout is a
modelling choice made elsewhere (here it was switched by the caller). The
EMA model is updated in place under no_grad.
"""
import copy

import torch
import torch.nn.functional as F


def train_student(student, teacher, train_loader, optimizer, epochs, T=2.0, decay=0.999):
    student.train()
    ema_model = copy.deepcopy(student)
    for epoch in range(epochs):
        for x, y in train_loader:
            with torch.no_grad():
                t_logits = teacher(x)
            s_logits = student(x)
            loss = F.kl_div(F.log_softmax(s_logits / T, 1), F.softmax(t_logits / T, 1), reduction="batchmean")
            loss = loss + F.cross_entropy(s_logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                for e, p in zip(ema_model.parameters(), student.parameters()):
                    e.mul_(decay).add_(p, alpha=1 - decay)
    return student, ema_model
