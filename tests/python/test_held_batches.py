"""The bound on batches the consumer holds: a clear error past it, never a hang, never
unbounded memory."""

import gc
import threading

import numpy as np
import pytest

import stoke_loader as sl


@pytest.fixture
def rows():
    return np.arange(200 * 4, dtype=np.float32).reshape(200, 4)


def test_default_bound_stops_a_leak(rows):
    loader = sl.Loader(rows, batch_size=5, num_workers=2)  # 40 batches an epoch
    assert loader.max_held_batches == sl.DEFAULT_MAX_HELD_BATCHES == 16
    with pytest.raises(sl.HeldBatchesError) as raised:
        list(loader)  # keeps every batch
    message = str(raised.value)
    assert "holds 16 batches" in message and "max_held_batches=16" in message
    assert "max_held_batches=32" in message and "None" in message
    assert isinstance(raised.value, sl.StokeError) and isinstance(raised.value, RuntimeError)


def test_no_batch_is_lost_past_the_bound(rows):
    loader = sl.Loader(rows, batch_size=10, shuffle=True, seed=3, num_workers=2,
                       max_held_batches=3)
    epoch = iter(loader)
    kept = [next(epoch) for _ in range(3)]
    assert loader.held_batches == 3
    with pytest.raises(sl.HeldBatchesError, match="holds 3 batches"):
        next(epoch)
    with pytest.raises(sl.HeldBatchesError):  # still held: still refused, nothing lost
        next(epoch)
    steps = [b.step for b in kept]
    indices = [i for b in kept for i in b.indices]
    del kept
    gc.collect()
    assert loader.held_batches == 0
    for batch in epoch:  # the batch refused comes now, then the rest
        steps.append(batch.step)
        indices.extend(batch.indices)
    assert steps == list(range(20))
    assert sorted(indices) == list(range(200))


def test_arrays_over_a_batch_count_as_holding_it(rows):
    loader = sl.Loader(rows, batch_size=10, max_held_batches=2)
    arrays = []
    with pytest.raises(sl.HeldBatchesError, match="holds 2 batches"):
        for batch in loader:
            arrays.append(np.from_dlpack(batch["x"]))  # the batch lives in its arrays
            del batch
    assert loader.held_batches == 2
    arrays.clear()
    gc.collect()
    assert loader.held_batches == 0


def test_a_loop_needs_a_bound_of_two(rows):
    loader = sl.Loader(rows, batch_size=10, max_held_batches=2)
    for _ in range(2):
        assert sum(1 for _ in loader) == 20  # the loop variable and the next batch
    one = sl.Loader(rows, batch_size=10, max_held_batches=1)
    with pytest.raises(sl.HeldBatchesError, match="holds 1 batches"):
        for batch in one:
            pass
    del batch  # the loop variable outlives the loop
    count = 0
    for batch in one:  # letting go of each batch in the body keeps within a bound of 1
        count += 1
        del batch
    assert count == 20


def test_the_epoch_ends_even_at_the_bound(rows):
    loader = sl.Loader(rows[:20], batch_size=10, max_held_batches=2)
    epoch = iter(loader)
    kept = [next(epoch), next(epoch)]
    with pytest.raises(StopIteration):  # no batch left: the end, not an error
        next(epoch)
    assert [b.step for b in kept] == [0, 1]


def test_no_bound(rows):
    loader = sl.Loader(rows, batch_size=5, max_held_batches=None)
    assert loader.max_held_batches is None
    kept = list(loader)
    assert len(kept) == 40 and loader.held_batches == 40
    with pytest.raises(ValueError, match="max_held_batches"):
        sl.Loader(rows, max_held_batches=0)


def test_shares_and_parts_have_the_bound(rows):
    loader = sl.Loader(rows, batch_size=5, remainder="pad", max_held_batches=3)
    parts = loader.share(2, 1).split(2)
    assert all(p.max_held_batches == 3 for p in parts)
    with pytest.raises(sl.HeldBatchesError):
        list(parts[0])


def test_batches_released_in_another_thread_free_the_bound(rows):
    loader = sl.Loader(rows, batch_size=10, max_held_batches=4, num_workers=2)
    epoch = iter(loader)
    kept = [next(epoch) for _ in range(4)]
    with pytest.raises(sl.HeldBatchesError):
        next(epoch)
    thread = threading.Thread(target=kept.clear)
    thread.start()
    thread.join()
    gc.collect()
    assert next(epoch).step == 4


def test_the_bound_bounds_the_memory_of_a_leaking_consumer(rows):
    """A consumer that keeps every batch stops at the bound's worth of buffers."""
    loader = sl.Loader(rows, batch_size=5, max_held_batches=4, num_workers=1)
    leaked, pointers = [], set()
    with pytest.raises(sl.HeldBatchesError):
        for batch in loader:
            leaked.append(batch)
            pointers.add(np.from_dlpack(batch["x"]).__array_interface__["data"][0])
    assert len(leaked) == 4 and len(pointers) == 4 and loader.held_batches == 4
