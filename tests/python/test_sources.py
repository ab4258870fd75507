"""File sources: .npy/.npz files read in place, shards of them, HDF5 and NetCDF-4 variables."""

import os
import zipfile

import numpy as np
import pytest

import stoke_loader as sl


def mapping_of(address: int):
    """The (path, offset in the file) of the file mapping holding ``address``, from
    /proc/self/maps, or None when no file mapping holds it."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(v, 16) for v in fields[0].split("-"))
            if start <= address < end and len(fields) >= 6 and fields[5].startswith("/"):
                return fields[5], address - start + int(fields[2], 16)
    return None


def pointer(array) -> int:
    return np.asarray(array).__array_interface__["data"][0]


def member_data_offset(path, member: str) -> int:
    """Where the npy data of a stored member begins in the npz file, from zipfile and the npy
    header (independent of stoke's zip reader)."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
        with open(path, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(30)
            name_len = int.from_bytes(local[26:28], "little")
            extra_len = int.from_bytes(local[28:30], "little")
            start = info.header_offset + 30 + name_len + extra_len
            f.seek(start)
            head = f.read(12)
            major = head[6]
            header_len = int.from_bytes(head[8:10] if major == 1 else head[8:12], "little")
            return start + (10 if major == 1 else 12) + header_len


def all_rows(loader):
    """{dataset index: {column: row}} over one epoch, with the real rows only."""
    out = {}
    for batch in loader:
        for k, index in enumerate(batch.indices[batch.mask]):
            assert index not in out, f"index {index} twice"
            out[index] = {name: np.from_dlpack(batch[name])[k].copy() for name in batch}
    return out


# .npz and .npy files


def test_npz_stored_members_are_read_in_place(tmp_path):
    path = tmp_path / "data.npz"
    x = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
    y = np.arange(40, dtype=np.int64) * 7
    np.savez(path, x=x, y=y)
    arrays = sl.npz(path)
    assert set(arrays) == {"x", "y"}
    for name, expected in (("x", x), ("y", y)):
        array = arrays[name]
        np.testing.assert_array_equal(array, expected)
        assert not array.flags.writeable and not array.flags.owndata
        where = mapping_of(pointer(array))
        assert where is not None and os.path.samefile(where[0], path), where
        assert where[1] == member_data_offset(path, name + ".npy")  # at the member's data
    loader = sl.Loader(arrays, batch_size=6, shuffle=True, seed=4, num_workers=2)
    rows = all_rows(loader)
    assert sorted(rows) == list(range(40))
    for index, row in rows.items():
        np.testing.assert_array_equal(row["x"], x[index])
        assert row["y"] == y[index]


def test_npz_compressed_member_is_refused_or_inflated(tmp_path):
    path = tmp_path / "small.npz"
    x = np.arange(30, dtype=np.int16).reshape(10, 3)
    np.savez_compressed(path, x=x)
    with pytest.raises(sl.InputError, match=r"small\.npz', member 'x\.npy' is compressed"):
        sl.npz(path)
    inflated = sl.npz(path, inflate=True)["x"]
    np.testing.assert_array_equal(inflated, x)
    assert mapping_of(pointer(inflated)) is None or not os.path.samefile(
        mapping_of(pointer(inflated))[0], path)


def test_truncated_and_corrupt_npz(tmp_path):
    path = tmp_path / "cut.npz"
    np.savez(path, x=np.zeros((100, 8), dtype=np.float64))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(sl.InputError, match=r"cut\.npz"):
        sl.npz(path)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 this is no zip file at all")
    with pytest.raises(sl.InputError, match=r"bad\.npz"):
        sl.npz(bad)
    with pytest.raises(sl.InputError, match=r"has no array 'z'.*'x'"):
        sl.npz(tmp_path / "good.npz" if np.savez(tmp_path / "good.npz", x=np.zeros(3)) else
               tmp_path / "good.npz", ["z"])


def test_npy_is_read_in_place_and_checked(tmp_path):
    path = tmp_path / "a.npy"
    a = np.arange(24, dtype=np.uint16).reshape(6, 4)
    np.save(path, a)
    array = sl.npy(path)
    np.testing.assert_array_equal(array, a)
    where = mapping_of(pointer(array))
    assert where is not None and os.path.samefile(where[0], path)
    assert where[1] == 128  # numpy's npy header of version 1.0
    corrupt = tmp_path / "corrupt.npy"
    corrupt.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': garbage")
    with pytest.raises(sl.InputError, match=r"corrupt\.npy"):
        sl.npy(corrupt)
    big_endian = tmp_path / "big.npy"
    np.save(big_endian, np.zeros(4, dtype=">f4"))
    with pytest.raises(sl.InputError, match=r"big\.npy"):
        sl.npy(big_endian)


# Shards


@pytest.fixture
def npy_shards(tmp_path):
    """Three .npy shards of 7, 5 and 9 rows whose values name their global row."""
    directory = tmp_path / "shards"
    directory.mkdir()
    sizes, begin = (7, 5, 9), 0
    for k, size in enumerate(sizes):
        rows = np.arange(begin, begin + size, dtype=np.float32)
        np.save(directory / f"part-{k}.npy", np.stack([rows, rows * 10], axis=1))
        begin += size
    (directory / "README.txt").write_text("not a shard")
    return directory, sizes


def test_a_directory_of_npy_shards_is_one_column(npy_shards):
    directory, sizes = npy_shards
    column = sl.shards(directory)
    assert column.rows == sum(sizes) and column.row_shape == (2,)
    assert [os.path.basename(f) for f in column.files] == ["part-0.npy", "part-1.npy",
                                                           "part-2.npy"]
    loader = sl.Loader({"x": column}, batch_size=4, shuffle=True, seed=2, num_workers=2)
    rows = all_rows(loader)
    assert sorted(rows) == list(range(sum(sizes)))
    for index, row in rows.items():
        np.testing.assert_array_equal(row["x"], [index, index * 10])


def test_shuffle_shards_keeps_batches_in_one_shard(npy_shards):
    directory, sizes = npy_shards
    begins = np.cumsum((0,) + sizes)
    loader = sl.Loader(sl.shards(directory), batch_size=3, shuffle_shards=True, seed=5,
                       num_workers=2)
    shard_of = lambda i: int(np.searchsorted(begins, i, side="right") - 1)
    for _ in range(2):
        visited = []
        for batch in loader:
            visited.extend(shard_of(i) for i in batch.indices)
        # Each shard is visited in one run: its rows are consecutive in the epoch.
        runs = [s for k, s in enumerate(visited) if k == 0 or visited[k - 1] != s]
        assert sorted(runs) == [0, 1, 2]
    with pytest.raises(sl.UsageError, match="shuffle_shards needs a column read from shards"):
        sl.Loader(np.zeros(4), shuffle_shards=True)


@pytest.mark.parametrize("remainder", ["pad", "drop"])
def test_shards_exactly_once_over_share_and_split(npy_shards, remainder):
    directory, sizes = npy_shards
    n = sum(sizes)
    make = lambda: sl.Loader({"x": sl.shards(directory)}, batch_size=2, shuffle=True, seed=8,
                             remainder=remainder, num_workers=1)
    seen, dropped = [], None
    for rank in range(2):
        devices = make().share(2, rank).split(2)
        dropped = devices[0].num_dropped
        for pair in zip(*devices):
            assert len({b.size for b in pair}) == 1
            for batch in pair:
                x = np.from_dlpack(batch["x"])
                np.testing.assert_array_equal(x[:, 0], batch.indices)  # the right rows
                seen.extend(batch.indices[batch.mask])
    if remainder == "pad":
        assert sorted(seen) == list(range(n))
    else:
        assert len(seen) == len(set(seen)) and n - len(seen) == dropped == 5


def test_npz_shards_give_a_column_per_member(tmp_path):
    directory = tmp_path / "npz"
    directory.mkdir()
    for k in range(3):
        rows = np.arange(k * 4, k * 4 + 4)
        np.savez(directory / f"s{k}.npz", image=np.repeat(rows, 6).reshape(4, 2, 3).astype(
            np.uint8), label=rows.astype(np.int32))
    columns = sl.shards(directory)
    assert set(columns) == {"image", "label"}
    loader = sl.Loader(columns, batch_size=5, shuffle=True, seed=1, remainder="pad")
    rows = all_rows(loader)
    assert sorted(rows) == list(range(12))
    for index, row in rows.items():
        assert row["label"] == index and (row["image"] == index).all()
    compressed = tmp_path / "compressed"
    compressed.mkdir()
    np.savez_compressed(compressed / "c.npz", x=np.zeros((3, 2)))
    with pytest.raises(sl.InputError, match=r"c\.npz', member 'x\.npy' is compressed"):
        sl.shards(compressed)
    inflated = sl.shards(compressed, inflate=True)["x"]
    assert inflated.rows == 3


def test_a_corrupt_npy_in_a_shard_directory_is_named(npy_shards):
    directory, _ = npy_shards
    (directory / "part-1.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    with pytest.raises(sl.InputError, match=r"part-1\.npy"):
        sl.shards(directory)


def test_a_shard_of_another_dtype_or_shape_is_named(npy_shards):
    directory, _ = npy_shards
    np.save(directory / "part-3.npy", np.zeros((2, 2), dtype=np.float64))
    with pytest.raises(sl.InputError, match=r"part-3\.npy' holds float64, the dataset reads "
                                            r"float32"):
        sl.shards(directory)
    np.save(directory / "part-3.npy", np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(sl.InputError, match=r"part-3\.npy' holds float32 \[2, 3\], whose rows "
                                            r"differ"):
        sl.shards(directory)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_shard_truncated_after_opening_raises_naming_it(npy_shards, num_workers):
    directory, sizes = npy_shards
    column = sl.shards(directory)  # opens and checks every file
    path = directory / "part-2.npy"
    # Shard 2 (rows 12..20) loses its last row before the loader exists: its read-ahead may
    # begin as soon as it is made, and must not race the truncation.
    os.truncate(path, os.path.getsize(path) - 8)
    loader = sl.Loader({"x": column}, batch_size=4, num_workers=num_workers)
    with pytest.raises(sl.DataError) as raised:
        for _ in loader:
            pass
    message = str(raised.value)
    assert "part-2.npy" in message and "epoch 0, step 3" in message and "cpu:0" in message
    assert "column 'x', row 12" in message and "dataset index 12" in message


def test_shards_of_a_missing_or_empty_directory(tmp_path):
    with pytest.raises(sl.InputError, match="no file in"):
        sl.shards(tmp_path)
    with pytest.raises(sl.UsageError, match=r"\.txt"):
        (tmp_path / "a.txt").write_text("x")
        sl.shards([tmp_path / "a.txt"])


# HDF5 and NetCDF-4


def test_hdf5_variable_rows(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "fields.h5"
    temp = np.random.default_rng(0).standard_normal((30, 3, 4)).astype(np.float32)
    with h5py.File(path, "w") as f:
        f.create_dataset("group/temp", data=temp, chunks=(4, 3, 4), compression="gzip")
        f.create_dataset("step", data=np.arange(30, dtype=np.int64))
    column = sl.hdf5(path, "group/temp")
    assert column.rows == 30 and column.row_shape == (3, 4)
    loader = sl.Loader({"temp": column, "step": sl.hdf5(path, "/step")}, batch_size=7,
                       shuffle=True, seed=3, num_workers=2, remainder="pad")
    rows = all_rows(loader)
    assert sorted(rows) == list(range(30))
    for index, row in rows.items():
        np.testing.assert_array_equal(row["temp"], temp[index])
        assert row["step"] == index
    with pytest.raises(sl.InputError, match=r"fields\.h5.*missing|fields\.h5.*no "):
        sl.hdf5(path, "pressure")
    with pytest.raises(sl.InputError, match=r"nothing\.h5"):
        sl.hdf5(tmp_path / "nothing.h5", "x")


def test_hdf5_exactly_once_over_share_and_split(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "v.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=np.arange(25, dtype=np.int32) * 3)
    seen = []
    for rank in range(2):
        loader = sl.Loader({"v": sl.hdf5(path, "v")}, batch_size=3, shuffle=True, seed=1,
                           remainder="pad")
        for pair in zip(*loader.share(2, rank).split(2)):
            for batch in pair:
                np.testing.assert_array_equal(np.from_dlpack(batch["v"]), batch.indices * 3)
                seen.extend(batch.indices[batch.mask])
    assert sorted(seen) == list(range(25))


def test_netcdf4_variable(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    path = tmp_path / "era.nc"
    t2m = np.arange(12 * 5 * 6, dtype=np.float32).reshape(12, 5, 6)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 5)
        ds.createDimension("lon", 6)
        ds.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True)[:] = t2m
    loader = sl.Loader({"t2m": sl.hdf5(path, "t2m")}, batch_size=5, shuffle=True, seed=2)
    for index, row in all_rows(loader).items():
        np.testing.assert_array_equal(row["t2m"], t2m[index])


def test_hdf5_shards(tmp_path):
    h5py = pytest.importorskip("h5py")
    files = []
    for k in range(3):
        files.append(tmp_path / f"year{k}.h5")
        with h5py.File(files[-1], "w") as f:
            f.create_dataset("v", data=np.arange(k * 4, k * 4 + 4, dtype=np.float64))
    loader = sl.Loader({"v": sl.shards(files, variable="v")}, batch_size=5, shuffle_shards=True,
                       seed=3)
    rows = all_rows(loader)
    assert sorted(rows) == list(range(12))
    assert all(row["v"] == index for index, row in rows.items())


def test_a_build_without_hdf5_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(sl._native, "has_hdf5", False)
    with pytest.raises(sl.NotBuiltError, match="built without HDF5.*libhdf5-dev"):
        sl.hdf5(tmp_path / "a.h5", "x")
    with pytest.raises(sl.NotBuiltError, match="built without HDF5"):
        sl.shards([tmp_path / "a.nc"], variable="x")


def test_shuffle_shards_needs_columns_sharded_alike(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for k, (na, nb) in enumerate(((3, 2), (2, 3))):
        np.save(a / f"{k}.npy", np.zeros(na))
        np.save(b / f"{k}.npy", np.zeros(nb))
    data = {"a": sl.shards(a), "b": sl.shards(b)}
    assert len(list(sl.Loader(data, batch_size=2, shuffle=True))) == 3  # fine unless sharded
    with pytest.raises(sl.UsageError, match="shards of column 'b' begin at other rows"):
        sl.Loader(data, batch_size=2, shuffle_shards=True)
