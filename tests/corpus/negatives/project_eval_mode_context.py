# guards: TL101
"""A project's own context manager that wraps torch.no_grad (monai's eval_mode,
ultralytics' smart_inference_mode): torchlint cannot read it, so it stays silent."""
from monai.networks.utils import eval_mode
from ultralytics.utils.torch_utils import smart_inference_mode


def validate(model, val_iter, criterion):
    running_loss = 0.0
    with eval_mode(model):
        for inputs, labels in val_iter:
            outputs = model(inputs)
            running_loss += criterion(outputs, labels).item()
    return running_loss


@smart_inference_mode()
def predict(model, loader):
    model.eval()
    return [model(x).argmax(1) for x in loader]
