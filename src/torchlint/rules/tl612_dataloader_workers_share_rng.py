"""TL612 (opt-in): DataLoader workers each draw from a copy of the same random generator."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.worker_rng import GLOBAL_NUMPY, copied_draws
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

# torch 1.9 seeds NumPy's global generator in every worker (pytorch/pytorch#56488).
_NUMPY_SEEDED_SINCE = (1, 9)
_ADVICE = ("so the workers draw the same numbers and every epoch repeats them; reseed it in a worker_init_fn "
           "from torch.utils.data.get_worker_info().seed")


class DataLoaderWorkersShareRng(Rule):
    code = "TL612"
    name = "dataloader-workers-share-rng"
    message = f"DataLoader workers each start from a copy of the dataset's random generator, {_ADVICE}"
    torch_programs_only = True
    default = False
    needs = Text(r"DataLoader") & Text(r"random|Generator")
    torch_version = """
Since torch 1.9 every DataLoader worker seeds NumPy's global generator
(`np.random`) from its own seed, so `np.random.rand()` in `__getitem__` draws
differently in each worker and each epoch; the rule reports it only for a
target torch version older than 1.9. A generator object the dataset holds is
copied into every worker at every version.
"""
    docs = """
## What it does
Finds a `DataLoader` with worker processes (`num_workers` other than `0`)
and no `worker_init_fn`, loading a dataset class of the same file whose
`__getitem__` (or `__iter__`, or a method of the class they call) draws
random numbers from a generator made once, in the main process:
`self.rng = np.random.default_rng()` or `np.random.RandomState(seed)` in
`__init__`, a module-level `rng = random.Random()`, a
`torch.Generator()` passed as `generator=`. For a target torch older than
1.9, the global `np.random.*` functions count too. Opt-in: enable with
`extend-select = ["TL612"]`.

Not reported: datasets that make their generator in the worker (lazily, in
`__getitem__`), reseed it there, or ask `torch.utils.data.get_worker_info()`
which worker they run in; `DataLoader(..., num_workers=0)`; a
`worker_init_fn` of any kind; datasets built in another file or wrapped
before they reach the loader (`Subset`, `ConcatDataset`).

## Why is this bad
Each worker process gets a copy of the dataset, generator included, in the
same state. torch seeds its own generator, Python's `random` and NumPy's
global one differently in every worker, but it cannot know about a
generator object the dataset keeps: worker 0 and worker 1 draw the same
"random" crops, flips and noise for the samples they load. And since the
main process's generator never advances, every epoch starts the workers
from the same state again, so the augmentations repeat epoch after epoch.
The model sees far less variety than the code suggests. Passing a seeded
`generator=` to the DataLoader does not help: it only decides torch's
per-worker seeds.

## Example
```python
class Noisy(Dataset):
    def __init__(self, images):
        self.images = images
        self.rng = np.random.default_rng(0)

    def __getitem__(self, i):
        return self.images[i] + self.rng.normal(0, 0.1, self.images[i].shape)

loader = DataLoader(Noisy(images), batch_size=32, shuffle=True, num_workers=4)
```

## Use instead
```python
def reseed(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)  # differs per worker and per epoch

loader = DataLoader(Noisy(images), batch_size=32, shuffle=True, num_workers=4,
                    worker_init_fn=reseed)
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        global_numpy = file_model.target_torch_version < _NUMPY_SEEDED_SINCE
        for found in copied_draws(file_model, global_numpy):
            held = [g for g in found.generators if g != GLOBAL_NUMPY]
            what = f"{found.dataset_class}'s random generator ({held[0]})" if held else \
                "NumPy's global random generator (not seeded per worker before torch 1.9)"
            yield self.report(found.loader.node, message=f"DataLoader workers each start from a copy of {what}, "
                                                           f"{_ADVICE}")

    valid = (
        """\
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, images):
        self.images = images
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i] + self.rng.normal(0, 0.1, self.images[i].shape)


def reseed(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


images = np.zeros((64, 8), dtype=np.float32)
loader = DataLoader(Noisy(images), batch_size=8, num_workers=2, worker_init_fn=reseed)
single = DataLoader(Noisy(images), batch_size=8, num_workers=0)
""",
        """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Flip(Dataset):
    # np.random in the worker: torch seeds it per worker and per epoch (since 1.9)
    def __init__(self, images):
        self.images = images

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = self.images[i]
        return image[:, ::-1].copy() if np.random.rand() < 0.5 else image


class Lazy(Flip):
    # the generator is made in the worker that uses it
    def __getitem__(self, i):
        if getattr(self, "rng", None) is None:
            self.rng = np.random.default_rng()
        return self.images[i] * self.rng.uniform(0.9, 1.1)


loader = DataLoader(Flip(np.zeros((64, 8, 8))), batch_size=8, num_workers=4)
lazy = DataLoader(Lazy(np.zeros((64, 8, 8))), batch_size=8, num_workers=4)
""",
    )
    invalid = (
        """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, images):
        self.images = images
        self.rng = np.random.RandomState(0)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.augment(self.images[i])

    def augment(self, image):
        return image + self.rng.normal(0, 0.1, image.shape)


train_set = Noisy(np.zeros((64, 8), dtype=np.float32))
loader = DataLoader(train_set, batch_size=8, shuffle=True, num_workers=4)  # expect: TL612
""",
        """\
# target-torch-version: 1.8
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Jitter(Dataset):
    def __init__(self, points):
        self.points = points

    def __len__(self):
        return len(self.points)

    def __getitem__(self, i):
        return self.points[i] + np.random.normal(0, 0.01, self.points[i].shape)


loader = DataLoader(Jitter(np.zeros((64, 3))), batch_size=8, num_workers=2)  # expect: TL612
""",
    )
