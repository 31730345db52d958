# guards: TL205 TL206
"""nanoGPT-style accumulation: scaled backward in the inner loop, one step after it.

Correct: the micro-steps only add scaled gradients; after the inner loop the
scaler unscales (when clipping is on), clips, steps and updates once per
outer iteration, then the gradients are cleared. A scaler built with
``enabled=(dtype == "float16")`` may be on, and is used as documented.
"""
import torch


def train(model, get_batch, optimizer, ctx, accum_steps, grad_clip, max_iters, dtype="float16"):
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    x, y = get_batch("train")
    for it in range(max_iters):
        for micro_step in range(accum_steps):
            with ctx:
                logits, loss = model(x, y)
                loss = loss / accum_steps
            x, y = get_batch("train")
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
