"""A loader's life around its process: Ctrl-C while waiting, close(), fork, churn."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stoke_loader as sl


def native_threads() -> int:
    """Threads of this process, native ones included (/proc/self/task)."""
    return len(os.listdir("/proc/self/task"))


def run_program(source: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True,
                          text=True, timeout=timeout)


def test_ctrl_c_while_waiting_for_a_batch_raises_keyboard_interrupt_promptly_and_loses_nothing():
    # One worker converts 192 MiB to floats for the one batch of an epoch (a tenth of a second
    # or more), so the consumer waits when SIGINT comes 20 ms into the wait; eight epochs. The
    # latency is from the signal to the exception. A signal that lands just after next()
    # returned the batch raises in the caller's next bytecode and loses that batch, as with any
    # Python iterator: such a round ("raced": the batch is gone) is counted apart, and rounds
    # go on (up to 24) until three came while waiting; those must lose nothing and have a median
    # latency under 100 ms.
    run = run_program("""
        import os, signal, statistics, threading, time
        import numpy as np, stoke_loader as sl
        # Python leaves SIGINT ignored where its parent ignored it (a job started in the
        # background by a non-interactive shell): the handler is installed explicitly.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        rows = np.ones((4096, 3 << 14), dtype=np.uint8)
        loader = sl.Loader({"x": sl.scaled(rows, 1 / 255)}, batch_size=4096, num_workers=1,
                           queue_depth=1)
        waiting, raced = [], 0
        for round in range(24):  # eight rounds, more while fewer than three came while waiting
            if round >= 8 and len(waiting) >= 3:
                break
            epoch = iter(loader)
            sent = []
            def interrupt():
                sent.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)
            threading.Timer(0.02, interrupt).start()
            try:
                next(epoch)
                time.sleep(1)  # the signal comes in here
                continue
            except KeyboardInterrupt:
                latency = time.perf_counter() - sent[0]
            batch = next(epoch, None)
            if batch is None:
                raced += 1
                continue
            assert batch.step == 0 and float(np.from_dlpack(batch["x"])[0, 0]) == np.float32(1 / 255)
            waiting.append(latency)
            del batch
        median = statistics.median(waiting) if waiting else float("nan")
        print(f"{len(waiting)} interrupted while waiting, {raced} raced, "
              f"median latency {median:.4f}")
        loader.close()
    """)
    assert run.returncode == 0, run.stderr
    words = run.stdout.split()
    assert int(words[0]) >= 3, f"too few interrupts came while waiting: {run.stdout}"
    assert float(words[-1]) < 0.1, f"KeyboardInterrupt came late: {run.stdout}"


def test_close_joins_the_workers_ends_an_open_epoch_and_the_loader_starts_again():
    before = native_threads()
    with sl.Loader({"x": np.arange(1000.0)}, batch_size=10, num_workers=3) as loader:
        epoch = iter(loader)
        next(epoch)
        assert native_threads() == before + 3
        loader.close()
        assert native_threads() == before
        with pytest.raises(sl.StateError, match="close"):
            for _ in epoch:
                pass
        assert sum(1 for _ in loader) == 100  # new workers for the next epoch
    assert native_threads() == before  # the end of the with block closed it


def test_a_forked_child_loads_with_new_workers_and_refuses_the_epoch_begun_before():
    rows = np.arange(20000.0).reshape(-1, 10)
    loader = sl.Loader({"x": rows}, batch_size=10, num_workers=2, queue_depth=4)
    epoch = iter(loader)
    first = next(epoch)  # the workers are busy reading ahead
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            try:
                next(epoch)
            except sl.StateError as error:
                assert "fork" in str(error)
                fresh = sl.Loader({"x": rows}, batch_size=10, num_workers=2)
                assert sum(b.real_size for b in fresh) == 2000
                assert sum(b.real_size for b in loader) == 2000  # restarted lazily here
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    rest = sum(b.real_size for b in epoch)
    assert first.real_size + rest == 2000  # the parent's epoch went on untouched


def test_many_forks_while_workers_draw_from_the_shared_batch_pool_never_hang_a_child():
    # Every loader of the process takes batch buffers from one pool: a child must never find its
    # lock held by a worker thread that the fork left behind.
    run = run_program("""
        import os, threading, numpy as np, stoke_loader as sl
        rows = np.arange(40000.0, dtype=np.float32).reshape(-1, 4)
        busy = sl.Loader({"x": rows}, batch_size=2, num_workers=2)
        stop = False
        def consume():
            while not stop:
                for _ in busy:
                    pass
        thread = threading.Thread(target=consume)
        thread.start()
        for _ in range(40):
            pid = os.fork()
            if pid == 0:
                fresh = sl.Loader({"x": rows}, batch_size=2, num_workers=2)
                os._exit(0 if sum(1 for _ in fresh) == 5000 else 1)
            _, status = os.waitpid(pid, 0)
            assert os.WEXITSTATUS(status) == 0
        stop = True
        thread.join()
        print("40 children loaded")
    """, timeout=90)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "40 children loaded"


def test_multiprocessing_fork_workers_make_their_own_loaders():
    run = run_program("""
        import multiprocessing as mp, numpy as np, stoke_loader as sl
        rows = np.arange(1000.0)
        parent = sl.Loader({"x": rows}, batch_size=10, num_workers=2)
        epoch = iter(parent)
        next(epoch)
        def load(seed):
            loader = sl.Loader({"x": rows}, batch_size=10, num_workers=2, shuffle=True, seed=seed)
            return sorted(int(v) for b in loader for v in np.from_dlpack(b["x"]))
        with mp.get_context("fork").Pool(2) as pool:
            results = pool.map(load, [1, 2, 3])
        assert all(r == list(range(1000)) for r in results)
        print(sum(1 for _ in epoch) + 1)
    """)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "100"


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGESIZE") / (1 << 20)


def test_ten_thousand_loaders_made_and_dropped_return_threads_and_memory():
    rows = np.arange(640.0).reshape(-1, 10)

    def churn(i: int, held: list) -> None:
        loader = sl.Loader({"x": rows}, batch_size=8, num_workers=2, remainder="pad",
                           max_held_batches=None)
        kind = i % 4
        if kind == 1:  # dropped mid-epoch
            epoch = iter(loader)
            next(epoch)
        elif kind == 2:  # a batch kept beyond its loader
            held[i % len(held)] = next(iter(loader))
        elif kind == 3:  # split, shares begun
            shares = loader.split(2)
            next(iter(shares[0]))
            iter(shares[1])

    held = [None] * 4
    for i in range(200):
        churn(i, held)
    threads, resident = native_threads(), resident_mib()
    for i in range(10000):
        churn(i, held)
    held.clear()
    assert native_threads() == threads
    grown = resident_mib() - resident
    print(f"10000 loaders: threads {native_threads()} (before {threads}), "
          f"resident memory grew by {grown:.2f} MiB")
    assert grown < 16, f"resident memory grew by {grown:.1f} MiB"
