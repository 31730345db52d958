# TL505's tree gate looked for `.data` in the text: `loss . data[0]`, and `loss.` continued
# by `data[0]` on the next line, were never asked (the declared Indexed shape reads the word).
import torch
import torch.nn as nn
criterion = nn.CrossEntropyLoss()
for x, y in loader:
    loss = criterion(model(x), y)
    print(loss . data[0])
    print(loss.\
          data[0])
