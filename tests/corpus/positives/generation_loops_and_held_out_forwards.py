"""TL101 for step-by-step generation and for held-out data inside training.

``greedy_decode`` and ``sample_chars`` feed the model its own output over ``range``;
``predict_step`` of a plain ``nn.Module`` is called by this file's own code, so no framework
turns grad off for it; ``cnn(test_x)`` runs every 50 steps of the training loop and nothing
backpropagates it. TL103: a model with dropout evaluated under ``inference_mode`` is never
put in eval mode."""
import torch
import torch.nn as nn


def greedy_decode(model, src, max_len, start):
    ys = torch.full((1, 1), start)
    for i in range(max_len):
        out = model(src, ys)  # expect: TL101
        nxt = out[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, nxt], 1)
    return ys


def sample_chars(model, h, n):
    chars = []
    x = torch.zeros(1, 1, 10)
    while len(chars) < n:
        out, h = model(x, h)  # expect: TL101
        chars.append(out.argmax().item())
    return chars


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = nn.GRU(8, 8)

    def forward(self, x, h):
        return self.decoder(x, h)

    def predict_step(self, x, h, steps):
        outs = []
        for _ in range(steps):
            x, h = self.decoder(x, h)  # expect: TL101
            outs.append(x.argmax(-1).tolist())
        return outs


cnn = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
optimizer = torch.optim.Adam(cnn.parameters())
loss_func = nn.CrossEntropyLoss()


def train(train_loader, test_x, test_y):
    for step, (b_x, b_y) in enumerate(train_loader):
        loss = loss_func(cnn(b_x), b_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            test_output = cnn(test_x)  # expect: TL101
            accuracy = (test_output.argmax(1) == test_y).float().mean().item()
            print(step, accuracy)


def predict_all(loader):
    preds = []
    with torch.inference_mode():
        for x in loader:
            preds.append(cnn(x).argmax(1))  # expect: TL103
    return preds


def greedy_translate(model, src, steps):
    memory = model.encoder(src)  # expect: TL101
    ys = [0]
    for _ in range(steps):
        out = model.decoder(torch.tensor([ys]), memory)  # expect: TL101
        ys.append(int(out[0, -1].argmax()))
    return ys


detector = nn.Sequential(nn.Linear(4, 2))
detector.eval()


def detect(image):
    boxes = detector(image)  # expect: TL101
    return boxes.argmax(1).tolist()


def translate_all(model, sources, frames):
    """Each helper above runs once per item here, so its single forwards repeat."""
    sentences = [greedy_translate(model, src, 20) for src in sources]
    labels = [detect(frame) for frame in frames]
    return sentences, labels
