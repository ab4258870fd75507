"""Memory-mapped fixed-size records, and .npy files through numpy's memory map."""

import numpy as np
import pytest

import stoke_loader as sl


@pytest.mark.parametrize("access", ["map", "read"])
def test_records_read_as_rows(tmp_path, access):
    data = np.arange(30 * 2 * 3, dtype=np.uint16).reshape(30, 2, 3)
    labels = np.arange(30, dtype=np.int64) * 10
    data.tofile(tmp_path / "images.bin")
    loader = sl.Loader({"image": sl.records(tmp_path / "images.bin", np.uint16, (2, 3),
                                            access=access),
                        "label": labels}, batch_size=7, shuffle=True, seed=3, num_workers=2)
    assert loader.dataset_size == 30
    seen = []
    for batch in loader:
        np.testing.assert_array_equal(np.from_dlpack(batch["image"]), data[batch.indices])
        np.testing.assert_array_equal(np.from_dlpack(batch["label"]), labels[batch.indices])
        seen.extend(batch.indices)
    assert sorted(seen) == list(range(30))


def test_npy_memory_mapped(tmp_path):
    data = np.random.default_rng(1).standard_normal((50, 8)).astype(np.float32)
    np.save(tmp_path / "d.npy", data)
    mapped = np.load(tmp_path / "d.npy", mmap_mode="r")  # read-only, read in place
    loader = sl.Loader({"d": mapped}, batch_size=16, remainder="pad", num_workers=2)
    for batch in loader:
        np.testing.assert_array_equal(np.from_dlpack(batch["d"]), data[batch.indices])
