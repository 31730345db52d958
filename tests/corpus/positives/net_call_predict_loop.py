"""TL101 by context only: ``net(x)`` in a loop inside ``predict``.

There is no ``.eval()`` call, but the function is named ``predict`` and
loops over ``test_loader``; no ``no_grad``/``inference_mode`` is in effect.
Predictions are converted with ``.tolist()``, so nothing graph-carrying is
stored.
"""


def predict(net, test_loader, device="cpu"):
    preds = []
    for x in test_loader:
        logits = net(x.to(device))  # expect: TL101
        preds.extend(logits.argmax(dim=1).tolist())
    return preds
