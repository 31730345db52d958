# guards: TL611
"""Differentially private training whose noise must not be reproducible.

Like opacus' examples: a cryptographically secure generator
(``secure_mode``) draws the privacy noise, and the script averages its
accuracy over several independent runs before it saves the results;
seeding would defeat both.
"""
import torch
from opacus import PrivacyEngine


def main(args, make_model, train_loader, test):
    results = []
    for _ in range(args.n_runs):
        model = make_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
        engine = PrivacyEngine(secure_mode=args.secure_mode)
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=train_loader,
            noise_multiplier=args.sigma, max_grad_norm=args.max_grad_norm)
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        results.append(test(model))
    torch.save(results, "run_results.pt")


if __name__ == "__main__":
    main(None, None, None, None)
