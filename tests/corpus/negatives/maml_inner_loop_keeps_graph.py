# guards: TL404
"""MAML: the inner loop's fast weights keep the graph on purpose.

Correct: the adapted weights are functions of the meta-parameters, so the
outer loss can differentiate through the inner updates
(``create_graph=True``). ``fast = fast - lr * grad`` style rebinding is
the algorithm here, not a bug, in both the list and the dict forms, and in
the variant that asks ``backward(create_graph=True)`` for ``.grad``.
"""
import torch
import torch.nn.functional as F
from torch import autograd


def functional_forward(x, weights):
    x = F.relu(F.linear(x, weights[0], weights[1]))
    return F.linear(x, weights[2], weights[3])


def adapt(weights, x_support, y_support, inner_lr, inner_steps):
    fast_weights = list(weights)
    for _ in range(inner_steps):
        loss = F.cross_entropy(functional_forward(x_support, fast_weights), y_support)
        grads = autograd.grad(loss, fast_weights, create_graph=True)
        fast_weights = [w - inner_lr * g for w, g in zip(fast_weights, grads)]
    return fast_weights


def adapt_named(model, params, x, y, inner_lr):
    loss = F.mse_loss(torch.func.functional_call(model, params, (x,)), y)
    grads = autograd.grad(loss, list(params.values()), create_graph=True)
    return {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}


def adapt_with_backward(w, x, y, inner_lr, steps):
    for _ in range(steps):
        loss = F.mse_loss(x @ w, y)
        loss.backward(create_graph=True, inputs=[w])
        w = w - inner_lr * w.grad
        w.retain_grad()
    return w


def meta_step(weights, tasks, meta_optimizer, inner_lr=0.4, inner_steps=1):
    meta_optimizer.zero_grad()
    for x_s, y_s, x_q, y_q in tasks:
        fast = adapt(weights, x_s, y_s, inner_lr, inner_steps)
        F.cross_entropy(functional_forward(x_q, fast), y_q).backward()
    meta_optimizer.step()
