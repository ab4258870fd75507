"""A program may end at any point of an epoch, also with a daemon thread still iterating."""

import subprocess
import sys

import pytest

PROGRAMS = {
    "mid_epoch": """
import numpy as np, stoke_loader as sl
loader = sl.Loader({"x": np.arange(100000.0).reshape(-1, 10)}, batch_size=10, num_workers=2)
epoch = iter(loader)
batch = next(epoch)
view = np.from_dlpack(batch["x"])
""",
    "daemon_consumer": """
import threading, time, numpy as np, stoke_loader as sl
loader = sl.Loader({"x": np.arange(1000000.0).reshape(-1, 10)}, batch_size=10, num_workers=2,
                   queue_depth=4)
started = threading.Event()
def consume():
    while True:
        for batch in loader:
            started.set()
threading.Thread(target=consume, daemon=True).start()
started.wait()
""",
    "loader_dropped_epoch_kept": """
import gc, numpy as np, stoke_loader as sl
def make():
    loader = sl.Loader({"x": np.arange(1000.0)}, batch_size=10, num_workers=2)
    epoch = iter(loader)
    next(epoch)
    return epoch
epoch = make()
gc.collect()
assert sum(1 for _ in epoch) == 99
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_program_ends_cleanly(name):
    run = subprocess.run([sys.executable, "-c", PROGRAMS[name]], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "terminate" not in run.stderr
