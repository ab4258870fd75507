"""Batches: zero copy through DLPack and the buffer protocol, their values, their lifetime."""

import gc
import threading

import numpy as np
import pytest

import stoke_loader as sl


def pointer(array) -> int:
    return np.asarray(array).__array_interface__["data"][0]


def test_batch_is_a_mapping_of_dlpack_arrays(table):
    x, y = table
    loader = sl.Loader({"x": x, "y": y}, batch_size=5)
    batch = next(iter(loader))
    assert isinstance(batch, sl.Batch)
    assert list(batch) == ["x", "y"] and batch.keys() == ["x", "y"] and len(batch) == 2
    assert "x" in batch and "z" not in batch and batch.get("z") is None
    for name, array in batch.items():
        assert hasattr(array, "__dlpack__") and array.__dlpack_device__() == (1, 0)  # kDLCPU
    assert np.from_dlpack(batch["x"]).dtype == np.float32
    assert np.from_dlpack(batch["x"]).shape == (5, 4)
    assert np.from_dlpack(batch["y"]).shape == (5,)
    with pytest.raises(KeyError):
        batch["z"]
    assert dict(batch).keys() == {"x", "y"}  # collections.abc.Mapping


def test_zero_copy_two_consumers_share_the_batch_memory(table):
    x, y = table
    loader = sl.Loader({"x": x, "y": y}, batch_size=4, shuffle=True, seed=3, num_workers=2)
    for batch in loader:
        first = np.from_dlpack(batch["x"])
        second = np.from_dlpack(batch["x"])  # a second DLPack export
        third = np.asarray(batch["x"])  # the buffer protocol
        assert pointer(first) == pointer(second) == pointer(third)
        assert first.ctypes.data == second.ctypes.data
        first[0, 0] = -1.0  # one memory: a write through one view shows in the others
        assert second[0, 0] == -1.0 and third[0, 0] == -1.0
        # The source array was not written: batches are the loader's own memory.
        assert x[batch.indices[0], 0] == batch.indices[0] * 4


def test_values_are_the_source_rows_in_the_epoch_order(table):
    x, y = table
    loader = sl.Loader({"x": x, "y": y}, batch_size=4, shuffle=True, seed=11, num_workers=3)
    for epoch in range(2):
        order = loader.order(epoch)
        seen = []
        for step, batch in enumerate(loader):
            assert (batch.epoch, batch.step) == (epoch, step)
            np.testing.assert_array_equal(batch.indices, order[step * 4:step * 4 + 4])
            np.testing.assert_array_equal(np.from_dlpack(batch["x"]), x[batch.indices])
            np.testing.assert_array_equal(np.from_dlpack(batch["y"]), y[batch.indices])
            seen.extend(batch.indices)
        assert sorted(seen) == list(range(len(y)))
    assert not np.array_equal(loader.order(0), loader.order(1))  # a new order every epoch


def test_strided_and_multidimensional_sources_are_read_in_place():
    base = np.arange(12 * 3 * 4, dtype=np.int16).reshape(12, 3, 4)
    views = {
        "every_other_row": base[::2],
        "reversed": base[::-1],
        "transposed_rows": base.transpose(0, 2, 1),  # rows not contiguous
        "fortran": np.asfortranarray(base),
    }
    for name, view in views.items():
        loader = sl.Loader({name: view}, batch_size=5, shuffle=True, seed=1)
        for batch in loader:
            np.testing.assert_array_equal(np.from_dlpack(batch[name]), view[batch.indices])


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.uint64,
                                   np.float16, np.float64, np.complex64])
def test_every_numeric_dtype_round_trips(dtype):
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((9, 2, 3)) * 10).astype(dtype)
    loader = sl.Loader(data, batch_size=4, shuffle=True, seed=2)  # one array: named "x"
    for batch in loader:
        out = np.from_dlpack(batch["x"])
        assert out.dtype == data.dtype
        np.testing.assert_array_equal(out, data[batch.indices])


def test_batches_kept_past_the_next_one_and_after_the_loader_is_dropped(table):
    x, y = table
    loader = sl.Loader({"x": x, "y": y}, batch_size=3, shuffle=True, seed=5, num_workers=2,
                       queue_depth=2)
    kept = list(loader)  # every batch of the epoch, each kept past the ones after it
    arrays = [np.from_dlpack(batch["x"]) for batch in kept]
    assert len({pointer(a) for a in arrays}) == len(kept)  # none was recycled while alive
    indices = [batch.indices.copy() for batch in kept]
    del loader
    gc.collect()
    for batch, array, rows in zip(kept, arrays, indices):
        np.testing.assert_array_equal(array, x[rows])
        np.testing.assert_array_equal(np.from_dlpack(batch["y"]), y[rows])
    del kept
    gc.collect()
    for array, rows in zip(arrays, indices):  # the arrays alone keep their memory
        np.testing.assert_array_equal(array, x[rows])


def test_the_source_array_lives_while_the_loader_does():
    loader = sl.Loader({"x": np.arange(40, dtype=np.float64).reshape(10, 4)}, batch_size=10)
    gc.collect()  # the loader holds the only reference to the array
    batch = next(iter(loader))
    np.testing.assert_array_equal(np.from_dlpack(batch["x"]),
                                  np.arange(40, dtype=np.float64).reshape(10, 4))


def test_batches_dropped_in_another_thread(table):
    x, y = table
    loader = sl.Loader({"x": x, "y": y}, batch_size=4, num_workers=2)
    batches = list(loader)
    views = [np.from_dlpack(b["x"]) for b in batches]
    expected = [x[b.indices] for b in batches]

    def drop(items):
        items.clear()
        gc.collect()

    thread = threading.Thread(target=drop, args=(batches,))
    thread.start()
    thread.join()
    for view, want in zip(views, expected):
        np.testing.assert_array_equal(view, want)
    del views
    gc.collect()
    assert sum(1 for _ in loader) == len(loader)  # the loader goes on as before


def test_memory_returns_to_the_pool(table):
    x, y = table
    loader = sl.Loader({"x": x, "y": y}, batch_size=4, remainder="drop", num_workers=0)
    for batch in loader:  # the pool is the process's, every loader's: the first epoch fills it
        pass
    allocated = sl._native.batch_buffers_allocated()
    pointers = set()
    batches = 0
    for _ in range(3):
        for batch in loader:
            pointers.add(pointer(np.from_dlpack(batch["x"])))
            batches += 1
    # Buffers are recycled: nothing is allocated in steady state, and a few buffers take turns.
    assert batches == 15
    assert sl._native.batch_buffers_allocated() == allocated
    assert len(pointers) < batches


def test_a_new_loader_takes_buffers_an_earlier_one_gave_back():
    # Rows of a size no other test uses (3 x 8000 bytes a batch), so that the buffers given
    # back are the only ones of their size in the process's pool.
    data = np.arange(12 * 1000, dtype=np.float64).reshape(12, 1000)
    first = sl.Loader(data, batch_size=3)
    given_back = {pointer(np.from_dlpack(batch["x"])) for batch in first}
    allocated = sl._native.batch_buffers_allocated()
    # The first loader is still alive. The second makes its batch in this thread, on demand: a
    # worker reading ahead would take one buffer more than the first loader happened to use.
    second = sl.Loader(data, batch_size=3, num_workers=0)
    batch = next(iter(second))
    assert pointer(np.from_dlpack(batch["x"])) in given_back
    assert sl._native.batch_buffers_allocated() == allocated


def test_padding_count_and_mask(table):
    x, y = table  # 23 rows
    loader = sl.Loader({"x": x, "y": y}, batch_size=5, remainder="pad")
    batches = list(loader)
    assert len(batches) == 5 and batches[-1].padding == 2
    last = batches[-1]
    np.testing.assert_array_equal(last.mask, [True, True, True, False, False])
    assert last.size == 5 and last.real_size == 3
    np.testing.assert_array_equal(last.indices[-2:], [0, 1])  # wraps to the epoch's start
    assert all(b.padding == 0 and b.mask.all() for b in batches[:-1])
    assert loader.num_padded == 2
    dropped = sl.Loader({"x": x}, batch_size=5, drop_last=True)
    assert len(dropped) == 4 and dropped.num_dropped == 3
    partial = sl.Loader({"x": x}, batch_size=5)
    assert [b.size for b in partial] == [5, 5, 5, 5, 3]


def test_num_workers_never_change_the_batches(table):
    x, y = table

    def run(workers):
        loader = sl.Loader({"x": x, "y": y}, batch_size=3, shuffle=True, seed=9,
                           num_workers=workers, queue_depth=3)
        return [[(b.epoch, b.step, list(b.indices)) for b in loader] for _ in range(3)]

    assert run(0) == run(1) == run(4)


def test_torch_from_dlpack_shares_the_batch_memory(table):
    x, y = table
    batch = next(iter(sl.Loader({"x": x, "y": y}, batch_size=2)))
    assert batch.device == "cpu:0"
    torch = pytest.importorskip("torch")
    tensor = torch.from_dlpack(batch["x"])
    assert tensor.data_ptr() == pointer(np.from_dlpack(batch["x"]))


def test_batch_repr(table):
    x, y = table
    batch = next(iter(sl.Loader({"x": x, "y": y}, batch_size=2, remainder="pad")))
    assert repr(batch) == ("Batch(epoch=0, step=0, size=2, padding=0, x=float32[2, 4], "
                           "y=int64[2], device=cpu:0)")


def test_two_threads_take_turns_on_one_epoch(table):
    x, y = table
    loader = sl.Loader({"x": np.repeat(x, 50, axis=0)}, batch_size=3, num_workers=2)
    epoch = iter(loader)
    steps = [[], []]

    def consume(out):
        for batch in epoch:
            out.append(batch.step)

    threads = [threading.Thread(target=consume, args=(out,)) for out in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(steps[0] + steps[1]) == list(range(len(loader)))


def test_dlpack_stream_argument_for_a_cpu_batch(table):
    x, _ = table
    batch = next(iter(sl.Loader({"x": x}, batch_size=4)))
    array = batch["x"]
    for stream in (None, -1):  # the DLPack specification's values for CPU memory
        out = np.from_dlpack(_Exporter(array, stream=stream))
        np.testing.assert_array_equal(out, x[batch.indices])
        assert pointer(out) == array.address
    for stream in (0, 1, 7):
        with pytest.raises(BufferError, match=rf"stream={stream}\) for a CPU batch"):
            array.__dlpack__(stream=stream)
    assert type(array.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"
    assert memoryview(array).shape == (4, 4) and memoryview(array).format == "f"
    assert array.shape == (4, 4) and array.nbytes == 64


class _Exporter:
    """Passes ``stream`` to the array's ``__dlpack__``, as a consumer of a stream would."""

    def __init__(self, array, stream):
        self.array, self.stream = array, stream

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(stream=self.stream, **kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()
