# guards: TL101 TL103
"""An evaluation loop of another framework: the file never imports torch.

Correct: a JAX/Flax model evaluated over a test set. There is no autograd
tape to switch off (JAX computes gradients only inside ``jax.grad``), so
``torch.no_grad()`` would be meaningless, and the fix that writes it would
leave a NameError behind.
"""
import jax
import jax.numpy as jnp
import flax.linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(128)(x))
        return nn.Dense(10)(x)


model = MLP()


def evaluate(params, test_loader):
    model.eval()
    correct = total = 0
    for images, labels in test_loader:
        logits = model.apply(params, images)
        correct += int((jnp.argmax(logits, -1) == labels).sum())
        total += labels.shape[0]
    return correct / total


def evaluate_model(params, test_loader):
    accs = []
    for x, y in test_loader:
        preds = model(x)
        accs.append(float((preds.argmax(-1) == y).mean()))
    return sum(accs) / len(accs)


if __name__ == "__main__":
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 784)))
    print(evaluate(params, []), evaluate_model(params, []))
