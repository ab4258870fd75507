"""Programs that end with stoke loaders alive in every way a Python program ends: mid-epoch, with
batches held, by sys.exit, by an exception, at interpreter shutdown with loaders in module
globals, with a daemon thread still iterating, with a worker dropping the last array at exit.
Each must exit with status 0 and nothing on standard error about an abort. Used by
test_shutdown.py (each once) and scripts/exit-loop (many times each)."""

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
    "sys_exit_mid_epoch_batches_held": """
import sys, numpy as np, stoke_loader as sl
loader = sl.Loader({"x": np.arange(100000.0).reshape(-1, 10)}, batch_size=10, num_workers=2,
                   remainder="pad")
shares = loader.split(2)
epochs = [iter(share) for share in shares]
held = [next(epoch) for epoch in epochs for _ in range(3)]
sys.exit(0)
""",
    "exception_mid_epoch": """
import sys, numpy as np, stoke_loader as sl
sys.excepthook = lambda *args: sys.exit(0)  # the exception ends the program; exit 0 says so
loader = sl.Loader({"x": np.arange(100000.0).reshape(-1, 10)}, batch_size=10, num_workers=2)
epoch = iter(loader)
batch = next(epoch)
raise RuntimeError("the training step failed")
""",
    "globals_left_to_interpreter_shutdown": """
import numpy as np, stoke_loader as sl
rows = np.arange(1000000.0).reshape(-1, 10)
LOADERS = [sl.Loader({"x": rows}, batch_size=10, num_workers=2, queue_depth=8)
           for _ in range(4)]
EPOCHS = [iter(loader) for loader in LOADERS]
BATCHES = [next(epoch) for epoch in EPOCHS]
VIEWS = [np.from_dlpack(batch["x"]) for batch in BATCHES]
""",
    # The workers are busy with slow batches when the program ends: the last reference to the
    # array is dropped by a worker thread while the interpreter finalizes (this aborted with
    # "terminate called without an active exception" before python_release.hpp).
    "worker_drops_the_last_array_at_exit": """
import numpy as np, stoke_loader as sl
rows = np.ones((64, 1 << 22), dtype=np.uint8)
loader = sl.Loader({"x": sl.scaled(rows, 1 / 255)}, batch_size=4, num_workers=2, queue_depth=4)
epoch = iter(loader)
next(epoch)
""",
}


#: The program that aborted with "terminate called without an active exception" before the
#: fix: a worker thread took the GIL during interpreter finalization.
ROOT_CAUSE = "worker_drops_the_last_array_at_exit"
