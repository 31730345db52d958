"""Forward passes after ``model.eval()`` that do run over evaluation data: a loop,
a comprehension over test images, and a one-image helper called in a loop."""
import torch

model = torch.nn.Linear(4, 2)
test_images = [torch.randn(1, 4) for _ in range(10)]

model.eval()
for image in test_images:
    print(model(image).argmax(1).item())  # expect: TL101
preds = [model(image).argmax(1) for image in test_images]  # expect: TL101


def classify(model, image):
    model.eval()
    logits = model(image)  # expect: TL101
    print(logits.argmax(1).item())


for image in test_images:
    classify(model, image)
