# guards: TL101 TL104
"""Knowledge distillation: frozen teacher in eval mode, student trained.

Correct: ``teacher.eval()`` only concerns the teacher, whose forward pass is
under ``torch.no_grad()``.  The student's forward pass after that call is a
training forward (student is in train mode, its loss is backpropagated), so
it must record a graph.
"""
import torch
import torch.nn.functional as F


def distill(student, teacher, train_loader, optimizer, epochs, device, T=4.0, alpha=0.7):
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                t_logits = teacher(x)
            s_logits = student(x)
            kd = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1),
                          reduction="batchmean") * T * T
            ce = F.cross_entropy(s_logits, y)
            loss = alpha * kd + (1 - alpha) * ce
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return student
