# guards: TL302
"""Two losses backpropagated through one shared forward graph.

Correct: ``loss1.backward(retain_graph=True)`` keeps the graph alive because
``loss2.backward()`` follows in the same iteration and goes through the same
``features``; the second backward frees it.  (Equivalent to
``(loss1 + loss2).backward()`` but lets the two gradients be inspected.)
"""
import torch.nn.functional as F


def train(encoder, cls_head, rec_head, loader, optimizer, epochs, device):
    for epoch in range(epochs):
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            features = encoder(images)
            loss1 = F.cross_entropy(cls_head(features), labels)
            loss2 = F.mse_loss(rec_head(features), images)
            loss1.backward(retain_graph=True)
            loss2.backward()
            optimizer.step()
            print(f"epoch {epoch}: cls {loss1.item():.4f} rec {loss2.item():.4f}")
