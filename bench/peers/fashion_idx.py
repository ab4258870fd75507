"""Reading the Fashion-MNIST IDX files (plain or gzip) for the PyTorch peers of the demo."""

import gzip
import os

import numpy as np


def read_idx(path):
    """The array an IDX file holds (uint8), shaped as its header says."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(folder, name):
    """`folder/name`, or `folder/name.gz` where the plain file is not there."""
    plain = os.path.join(folder, name)
    return plain if os.path.exists(plain) else plain + ".gz"
