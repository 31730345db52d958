# guards: TL101 TL301
"""FGSM robustness evaluation (after the PyTorch adversarial-example tutorial).

Correct: although this is an evaluation loop over ``test_loader`` after
``model.eval()``, the first forward pass must record a graph: its loss is
backpropagated to obtain the gradient w.r.t. the *input*
(``data.requires_grad = True``; ``loss.backward()``; ``data.grad``).  No
optimizer steps, so ``model.zero_grad()`` only discards the incidental
parameter gradients.  The forward pass on the perturbed input, which needs
no gradient, runs under ``torch.no_grad()``.  Only ``.item()`` values and
detached numpy copies are stored.
"""
import torch
import torch.nn.functional as F


def fgsm_attack(image, epsilon, data_grad):
    sign_data_grad = data_grad.sign()
    perturbed_image = image + epsilon * sign_data_grad
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    return perturbed_image


def test(model, device, test_loader, epsilon):
    model.eval()
    correct = 0
    adv_examples = []
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        data.requires_grad = True
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]
        if init_pred.item() != target.item():
            continue

        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        perturbed_data = fgsm_attack(data, epsilon, data_grad)

        with torch.no_grad():
            output = model(perturbed_data)
        final_pred = output.max(1, keepdim=True)[1]
        if final_pred.item() == target.item():
            correct += 1
        elif len(adv_examples) < 5:
            adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
            adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))

    final_acc = correct / float(len(test_loader))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)} = {final_acc}")
    return final_acc, adv_examples
