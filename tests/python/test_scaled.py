"""sl.scaled: rows converted to float32 value * scale + offset by the loader's workers, equal to
NumPy's float32 arithmetic, for arrays and records of every integer and float width."""
import numpy as np
import pytest

import stoke_loader as sl


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "int32", "uint32",
                                   "int64", "float32", "float64"])
def test_scaled_rows_equal_numpys_float32_arithmetic(dtype):
    rng = np.random.default_rng(7)
    data = rng.integers(-100, 200, size=(37, 3, 5)).astype(dtype)
    scale, offset = np.float32(1 / 255), np.float32(-0.5)
    loader = sl.Loader({"x": sl.scaled(data, scale, offset), "raw": data}, batch_size=8,
                       shuffle=True, seed=3, num_workers=2)
    seen = 0
    for batch in loader:
        x = np.from_dlpack(batch["x"])
        raw = np.from_dlpack(batch["raw"])
        assert x.dtype == np.float32 and x.shape == raw.shape
        expected = raw.astype(np.float32) * scale + offset
        np.testing.assert_array_equal(x, expected)
        seen += x.shape[0]
    assert seen == 37


def test_scaled_records(tmp_path):
    data = np.arange(6 * 4, dtype=np.uint8).reshape(6, 4)
    path = tmp_path / "rows.u8"
    data.tofile(path)
    loader = sl.Loader(sl.scaled(sl.records(path, np.uint8, (4,)), 0.5), batch_size=6)
    batch = next(iter(loader))
    np.testing.assert_array_equal(np.from_dlpack(batch["x"]), data.astype(np.float32) * 0.5)


def test_scaling_what_is_not_a_number_is_refused():
    with pytest.raises(Exception, match="scales integers or floats"):
        sl.Loader(sl.scaled(np.zeros((4, 2), dtype=np.float16), 2.0), batch_size=2)
