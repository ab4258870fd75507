"""Bad input and failures raise Python exceptions, never crash."""

import os
import re

import numpy as np
import pytest

import stoke_loader as sl


def test_exception_hierarchy():
    assert issubclass(sl.UsageError, ValueError) and issubclass(sl.InputError, ValueError)
    assert issubclass(sl.DataError, RuntimeError)
    assert issubclass(sl.BatchTimeoutError, TimeoutError)
    assert issubclass(sl.StateError, sl.UsageError)
    for error in (sl.UsageError, sl.InputError, sl.DataError, sl.BatchTimeoutError):
        assert issubclass(error, sl.StokeError)


@pytest.mark.parametrize("array", [
    np.array([object(), object()], dtype=object),
    np.zeros(4, dtype=[("a", np.int32), ("b", np.float32)]),
    np.array(["a", "b"]),
    np.zeros(3, dtype=">f4"),
])
def test_wrong_dtype(array):
    with pytest.raises(TypeError, match="stoke_loader: column 'x'"):
        sl.Loader({"x": array}, batch_size=2)


def test_wrong_shape_and_arguments():
    with pytest.raises(ValueError, match="scalar"):
        sl.Loader({"x": np.array(1.0)}, batch_size=1)
    with pytest.raises(sl.UsageError, match="column 'y' has 3 rows, column 'x' has 4"):
        sl.Loader({"x": np.zeros(4), "y": np.zeros(3)})
    with pytest.raises(sl.UsageError, match="batch_size must be at least 1"):
        sl.Loader({"x": np.zeros(4)}, batch_size=0)
    with pytest.raises(sl.UsageError, match="remainder"):
        sl.Loader({"x": np.zeros(4)}, remainder="wrap")
    with pytest.raises(TypeError, match="batch_size"):
        sl.Loader({"x": np.zeros(4)}, batch_size=2.5)
    with pytest.raises(TypeError, match="not an array"):
        sl.Loader({"x": [1, 2, 3]})
    with pytest.raises(TypeError):
        sl.Loader(42)
    with pytest.raises(ValueError, match="batch_timeout needs num_workers >= 1"):
        sl.Loader({"x": np.zeros(4)}, num_workers=0, batch_timeout=1.0)
    with pytest.raises(ValueError):
        sl.Loader({})
    loader = sl.Loader({"x": np.zeros(4)}, batch_size=2)
    with pytest.raises(sl.UsageError, match="Remainder::drop or Remainder::pad"):
        loader.split(2)
    padded = sl.Loader({"x": np.zeros(4)}, batch_size=2, remainder="pad")
    with pytest.raises(sl.UsageError, match="share 5 of 2"):
        padded.share(2, 5)
    with pytest.raises(ValueError, match="not a CPU device"):
        padded.split(["cuda:0"])


def test_bad_state_dict():
    make = lambda **kw: sl.Loader({"x": np.zeros(10)}, batch_size=2, shuffle=True, seed=1, **kw)
    good = make().state_dict()
    loader = make()
    with pytest.raises(sl.InputError, match="not valid JSON"):
        loader.load_state_dict("{not json")
    with pytest.raises(sl.InputError, match="epoch"):
        loader.load_state_dict({k: v for k, v in good.items() if k != "epoch"})
    with pytest.raises(sl.InputError, match="format"):
        loader.load_state_dict({**good, "format": "something.else"})
    with pytest.raises(sl.InputError, match="seed 2, this loader has 1"):
        loader.load_state_dict({**good, "seed": 2})
    with pytest.raises(sl.InputError, match="dataset size"):
        loader.load_state_dict({**good, "dataset_size": 11})
    with pytest.raises(sl.InputError, match="remainder"):
        make(remainder="pad").load_state_dict(good)
    with pytest.raises(sl.InputError):
        loader.load_state_dict({**good, "consumed": -1})
    with pytest.raises(sl.InputError):
        loader.load_state_dict({**good, "consumed": "3"})
    with pytest.raises(sl.InputError, match="more than its dataset size"):
        loader.load_state_dict({**good, "consumed": 11})
    with pytest.raises(TypeError):
        loader.load_state_dict(42)
    loader.load_state_dict(good)  # the loader is still usable
    assert len(list(loader)) == 5


def test_a_replaced_epoch_iterator_raises(table):
    x, _ = table
    loader = sl.Loader({"x": x}, batch_size=2, num_workers=2)
    first = iter(loader)
    next(first)
    second = iter(loader)  # supersedes the first
    next(second)
    with pytest.raises(sl.StokeError):
        for _ in first:
            pass


def test_records_errors(tmp_path):
    path = tmp_path / "r.bin"
    path.write_bytes(bytes(10))
    with pytest.raises(sl.InputError, match="not a multiple of the record size 4"):
        sl.Loader({"x": sl.records(path, np.float32)})
    with pytest.raises(sl.InputError, match="missing.bin"):
        sl.Loader({"x": sl.records(tmp_path / "missing.bin", np.uint8)})
    with pytest.raises(TypeError, match="dtype object"):
        sl.Loader({"x": sl.records(path, object)})
    with pytest.raises(ValueError, match="access"):
        sl.records(path, np.uint8, access="stream")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_failure_on_a_worker_names_the_sample_epoch_and_step(tmp_path, num_workers):
    path = tmp_path / "r.bin"
    np.arange(40, dtype=np.int32).tofile(path)  # 10 records of 4 int32
    loader = sl.Loader({"x": sl.records(path, np.int32, (4,), access="read")}, batch_size=2,
                       num_workers=num_workers)
    assert sum(1 for _ in loader) == 5
    os.truncate(path, 5 * 16)  # records 5..9 are gone: reading them fails
    with pytest.raises(sl.DataError) as raised:
        for _ in loader:
            pass
    message = str(raised.value)
    assert "epoch 1, step 2" in message and "r.bin" in message
    # The failing record by our column; by stoke, the first index of the batch (4) or of the
    # chunk of rows (5) a worker or the consumer was filling.
    assert "record 5" in message and re.search(r"dataset index [45] ", message)
    assert "cpu:0" in message
