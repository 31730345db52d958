"""TL302: retain_graph=True in a loop keeps every iteration's graph alive."""
from __future__ import annotations

from torchlint.model.expr import keyword, literal_bool, referenced_paths
from torchlint.rule import Rule


def _later_backward(model, call, loop) -> bool:
    """Another backward through the graph later in the same iteration (maybe in a helper)."""
    for later in model.calls_between(call.order + 1, loop.end):
        if model.is_backward(later) or model.is_autograd_grad(later):
            return True
        target = model.resolve(later)
        if target is not None and any(
            model.is_backward(c) or model.is_autograd_grad(c) for c in model.reachable_calls(target)
        ):
            return True
    return False


def _shares_graph_from_before(model, loop) -> bool:
    """The loop reuses a graph built before it (a shared trunk, a generator's output).

    Then every iteration backpropagates through the same graph and needs it
    retained; nothing accumulates.
    """
    taint = model.taint(loop.scope)
    before = taint.names_at(loop.start)
    if not before:
        return False
    if loop.iter is not None and taint.carries_graph(loop.iter, loop.start):
        return True  # for loss in (loss_a, loss_b): ...
    rebound = set()
    for a in loop.scope.assignments:
        if loop.contains(a.order) and a.kind != "aug":
            for t in a.targets:
                rebound.update(referenced_paths(t))
    read = set(referenced_paths(loop.node.body))
    return any(name in read and name not in rebound for name in before)


class RetainGraphInLoop(Rule):
    code = "TL302"
    name = "retain-graph-in-loop"
    message = (
        "backward(retain_graph=True) in a loop keeps the graph's saved tensors alive into the "
        "next iteration; drop retain_graph unless another backward in this iteration uses the graph"
    )
    fix_safety = "unsafe"
    gate = (r"retain_graph\s*=\s*True",)
    docs = """
## What it does
Finds `backward(retain_graph=True)` (and `torch.autograd.grad(...,
retain_graph=True)`) inside a loop when nothing later in the same iteration
backpropagates through that graph again.

## Why is this bad
`retain_graph=True` keeps the graph's saved tensors (the activations) after
the backward pass. In a loop they stay alive until the graph becomes
unreachable: at best when the next iteration rebinds `loss`, so the next
forward pass runs with the previous one's activations still in memory (up to
twice the peak); when something links the iterations (an RNN hidden state, a
running total), every graph stays and memory grows until out-of-memory. It is often added to silence "Trying to backward through the
graph a second time", which signals a tensor carried across iterations that
should have been detached.

Not reported: two backward passes through one graph in the same iteration
(`loss1.backward(retain_graph=True); loss2.backward()`), loops over several
losses or task heads that share a graph built before the loop, and
higher-order gradients with `create_graph=True`.

## Example
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward(retain_graph=True)
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Fix safety
Removing `retain_graph=True` is unsafe: if a later backward does reuse the
graph, it then raises.
"""

    def check(self, model):
        for call in model.calls:
            loop = call.site.loop
            if loop is None or not (model.is_backward(call) or model.is_autograd_grad(call)):
                continue
            if literal_bool(keyword(call.node, "retain_graph")) is not True:
                continue
            if literal_bool(keyword(call.node, "create_graph")) is True:
                continue
            if _later_backward(model, call, loop) or _shares_graph_from_before(model, loop):
                continue
            yield self.report(call.node)
