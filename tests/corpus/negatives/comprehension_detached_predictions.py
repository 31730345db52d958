# guards: TL301 TL402
"""Predictions turned into numpy arrays inside a comprehension before they are stored."""


def train_epoch(network, loader, optimizer, criterion):
    results = {}
    for data, y in loader:
        optimizer.zero_grad()
        output = network(data)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
        predictions = [out.cpu().detach().numpy() for out in output]
        for task_idx in range(len(predictions)):
            results[task_idx] = results.get(task_idx, []) + [predictions[task_idx]]
    return results
