# guards: TL612
"""A dataset that gives each DataLoader worker its own random generator.

``__getitem__`` asks ``get_worker_info()`` which worker it runs in and makes
the generator there from the worker's seed, which torch varies per worker
and per epoch; the augmentations differ everywhere without a
``worker_init_fn``. NumPy's global ``np.random`` (the flip) is seeded per
worker by torch itself since 1.9.
"""
import numpy as np
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Augmented(Dataset):
    def __init__(self, images):
        self.images = images
        self.rng = None

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        if self.rng is None:
            info = get_worker_info()
            self.rng = np.random.default_rng(info.seed if info is not None else None)
        image = self.images[index] * self.rng.uniform(0.8, 1.2)
        return image[:, ::-1].copy() if np.random.rand() < 0.5 else image


loader = DataLoader(Augmented(np.zeros((64, 8, 8), dtype=np.float32)), batch_size=8, num_workers=4)
