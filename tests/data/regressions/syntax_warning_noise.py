# ast.parse printed '<unknown>:3: SyntaxWarning' on torchlint's stderr
import torch
x = 1()
y = x is 1
for batch in loader:
    loss.backward()
