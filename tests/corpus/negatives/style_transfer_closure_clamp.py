# guards: TL201 TL401
"""Neural style transfer (after the PyTorch tutorial): LBFGS over an image.

Correct: the optimised tensor ``input_img`` is a leaf that requires grad, but
its in-place ``clamp_`` runs under ``torch.no_grad()`` both inside the
closure and after the loop.  The closure is defined inside the ``while`` loop
and calls ``optimizer.zero_grad()`` before ``loss.backward()``; the loop
itself only calls ``optimizer.step(closure)``.  ``run[0] += 1`` is a plain
integer counter.
"""
import torch
import torch.optim as optim


def get_input_optimizer(input_img):
    return optim.LBFGS([input_img])


def run_style_transfer(model, style_losses, content_losses, input_img,
                       num_steps=300, style_weight=1000000, content_weight=1):
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = get_input_optimizer(input_img)

    print("Optimizing..")
    run = [0]
    while run[0] <= num_steps:

        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)

            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0

            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss

            style_score *= style_weight
            content_score *= content_weight

            loss = style_score + content_score
            loss.backward()

            run[0] += 1
            if run[0] % 50 == 0:
                print(f"run {run}: Style Loss: {style_score.item():4f} Content Loss: {content_score.item():4f}")

            return style_score + content_score

        optimizer.step(closure)

    with torch.no_grad():
        input_img.clamp_(0, 1)

    return input_img
