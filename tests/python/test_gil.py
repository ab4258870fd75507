"""The GIL is released while a batch is made and while the consumer waits for one.

With a switch interval of 100 s, CPython hands the GIL over only when its holder lets it go.
A helper thread counts and lets it go now and then; the main thread reads the count before and
after it takes one slow batch. If the GIL were held while the batch is made, the helper could
not run in between, and the count would not change."""

import sys
import threading
import time

import numpy as np
import pytest

import stoke_loader as sl


@pytest.mark.parametrize("num_workers", [0, 1])
def test_a_python_thread_runs_while_a_batch_is_made(num_workers):
    rows = np.ones((8, 4 << 20), dtype=np.uint8)  # 8 rows of 4 MiB: a 32 MiB batch
    count = 0
    running = threading.Event()
    stop = False

    def counter():
        nonlocal count
        running.set()
        while not stop:
            count += 1
            if count % 256 == 0:
                time.sleep(0)  # lets the GIL go, as any blocking call does

    old = sys.getswitchinterval()
    thread = threading.Thread(target=counter)
    try:
        sys.setswitchinterval(100.0)
        thread.start()
        running.wait()
        progressed = []
        for attempt in range(3):  # one success proves it; more tries only for a busy machine
            loader = sl.Loader({"x": rows}, batch_size=8, num_workers=num_workers)
            epoch = iter(loader)
            before = count
            batch = next(epoch)
            after = count
            progressed.append(after - before)
            assert np.from_dlpack(batch["x"]).sum() == rows.size
            if after > before:
                break
        assert progressed[-1] > 0, progressed
    finally:
        stop = True
        sys.setswitchinterval(old)
        thread.join()
