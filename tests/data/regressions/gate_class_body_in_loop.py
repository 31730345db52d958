while True:
    class Net(nn.Module):
        loss = model
        loss.requires_grad = True
