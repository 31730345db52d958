"""The classic 0.3-era validation loop: volatile inputs after model.eval(), no no_grad."""
from torch.autograd import Variable


def validate(val_loader, model, criterion):
    model.eval()
    total = 0.0
    for i, (input, target) in enumerate(val_loader):
        input_var = Variable(input, volatile=True)  # expect: TL105
        target_var = Variable(target, volatile=True)  # expect: TL105
        output = model(input_var)  # expect: TL101
        total += criterion(output, target_var).item()
    return total / len(val_loader)
