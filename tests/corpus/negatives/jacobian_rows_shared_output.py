# guards: TL302
"""Jacobian by rows: the output is computed once before the loop and every row's
backward goes through that same graph, so retain_graph=True is required."""
import torch


def jacobian(model, image):
    image = image.clone().requires_grad_()
    output = model(image)
    rows = []
    for i in range(output.shape[1]):
        if image.grad is not None:
            image.grad.zero_()
        output[0][i].backward(retain_graph=True)
        rows.append(image.grad.detach().clone())
    return torch.stack(rows)


def hessian(y, xs):
    dys = torch.autograd.grad(y, xs, create_graph=True)
    flat = torch.cat([d.reshape(-1) for d in dys])
    out = []
    for dyi in flat:
        out.append(torch.cat([h.reshape(-1) for h in torch.autograd.grad(dyi, xs, retain_graph=True)]))
    return torch.stack(out)
