"""stoke_loader as a user gets it: test_install.py runs this with the Python of a new virtual
environment that holds only the wheel built from the sdist (and numpy, from PyPI), in a
directory outside the repository. A loader over NumPy arrays, its batches checked against the
arrays, an epoch interrupted and resumed from its state_dict; it prints what the build has and
ends with "install smoke: ok"."""

import json
import pathlib
import sys

import numpy as np

import stoke_loader as sl
import stoke_loader.features


def check(condition: bool, what: str) -> None:
    if not condition:
        sys.exit(f"install smoke: FAILED: {what}")


# The package of this environment, not a source tree's.
package = pathlib.Path(sl.__file__).resolve()
check(pathlib.Path(sys.prefix).resolve() in package.parents,
      f"stoke_loader imported from {package}, outside {sys.prefix}")

ROWS = 50
x = np.arange(ROWS * 3, dtype=np.float32).reshape(ROWS, 3)
y = np.arange(ROWS, dtype=np.int64) * 10


def make() -> sl.Loader:
    return sl.Loader({"x": x, "y": y}, batch_size=4, shuffle=True, seed=5, num_workers=2)


def epoch(loader: sl.Loader) -> list[list[int]]:
    """The dataset indices of one epoch's batches, each batch's rows checked against them."""
    out = []
    for batch in loader:
        indices = np.asarray(batch.indices)
        bx, by = np.from_dlpack(batch["x"]), np.from_dlpack(batch["y"])
        check(bx.shape == (len(indices), 3), f"batch shape {bx.shape}")
        check(np.array_equal(bx, x[indices]) and np.array_equal(by, y[indices]),
              f"batch {batch.step} holds other rows than its indices")
        out.append(indices.tolist())
    return out


loader = make()
first, second = epoch(loader), epoch(loader)
check(len(first) == 13, f"{len(first)} batches of 50 rows by 4, not 13")
for e, batches in enumerate((first, second)):
    check(sorted(i for b in batches for i in b) == list(range(ROWS)),
          f"epoch {e} does not hold every row once")
check(first != second, "two epochs in one order")

interrupted = make()
for step, batch in enumerate(interrupted):
    if step == 4:
        state = json.dumps(interrupted.state_dict())  # counts the batch being processed
        break
del batch
resumed = make()
resumed.load_state_dict(json.loads(state))
check(epoch(resumed) == first[5:], "the resumed epoch is not the rest of the first")
check(epoch(resumed) == second, "the epoch after the resumed one differs")

print(stoke_loader.features.describe())
print("install smoke: ok")
