# guards: TL302
"""Backward helpers that keep the graph they are handed, where the callers need it kept.

A helper cannot know whether its caller will backpropagate through the same
graph again; its callers do. Each helper here has one kind of caller: two heads
on one shared trunk each iteration, an auxiliary loss before the main one, a
fixed objective refined step by step, and per-head losses over features
computed once before the loop. Each needs the graph after the helper's
backward, so ``retain_graph=True`` is correct there.
"""
import torch


def backward_kept(loss, scale=1.0):
    (loss * scale).backward(retain_graph=True)


def auxiliary_backward(loss):
    loss.backward(retain_graph=True)


def refine_step(objective, optimizer):
    optimizer.zero_grad()
    objective.backward(retain_graph=True)
    optimizer.step()


def head_step(loss, optimizer):
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()


def train_two_heads(encoder, head_a, head_b, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        features = encoder(x)
        backward_kept(head_a(features, y))
        backward_kept(head_b(features, y), scale=0.5)
        optimizer.step()


def train_with_auxiliary(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        auxiliary_backward(out.pow(2).mean() * 1e-3)
        criterion(out, y).backward()
        optimizer.step()


def refine(objective, optimizer, steps):
    for _ in range(steps):
        refine_step(objective, optimizer)


def fit_heads(trunk, heads, x, y, optimizer):
    features = trunk(x)
    for head in heads:
        head_step(head(features, y), optimizer)
