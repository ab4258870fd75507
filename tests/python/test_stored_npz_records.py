"""stoke_loader.shards() of ``.npz`` shards and stoke_loader.records() over URLs: ``s3://``
(SeaweedFS, which checks signatures; a glob, a prefix, objects), ``http://`` (a range HTTP server)
and ``file://`` give the batches of the same files read locally; a manifest opens ``.npz``
shards without a read; a node cache fetches each object once for two loaders; a ``.npz`` object
with a wrong CRC-32 and a record object that is not whole records are refused naming the URL; a
build without libcurl says so. The servers are conftest.py's `servers`, started once for the
run; the tests put their objects into the bucket.

Rows name themselves: row r of the data set holds x = [3r, 3r + 1, 3r + 2] and y = 10r (.npz),
or the six uint16 values [6r, ..., 6r + 5] (records)."""

import io
import json
import pathlib

import numpy as np
import pytest

import stoke_loader as sl

NPZ_ROWS = [7, 12, 5, 9]  # parts 0 and 2 stored (np.savez), 1 and 3 compressed
NPZ_KEYS = [f"pynpz/part-{k}.npz" for k in range(len(NPZ_ROWS))]
RECORD_ROWS = [6, 11, 4, 9]
RECORD_KEYS = [f"pyrec/part-{k}.bin" for k in range(len(RECORD_ROWS))]
RECORD_SHAPE = (2, 3)


def npz_bytes(first, rows, compressed):
    """An archive of `rows` rows from row `first`: x (float32, 3 a row) and y (int64)."""
    r = np.arange(first, first + rows)
    out = io.BytesIO()
    save = np.savez_compressed if compressed else np.savez
    save(out, x=(3 * r[:, None] + np.arange(3)).astype(np.float32), y=10 * r)
    return out.getvalue()


def record_bytes(first, rows):
    """`rows` uint16 records of RECORD_SHAPE from row `first`."""
    r = np.arange(first, first + rows)
    return (6 * r[:, None] + np.arange(6)).astype(np.uint16).tobytes()


@pytest.fixture(scope="module")
def objects(servers, put):
    """The .npz and record objects under `pynpz/` and `pyrec/` of the bucket (and the data
    folder): their local files."""
    npz = [put(key, npz_bytes(sum(NPZ_ROWS[:k]), rows, k % 2 == 1))
           for k, (key, rows) in enumerate(zip(NPZ_KEYS, NPZ_ROWS))]
    records = [put(key, record_bytes(sum(RECORD_ROWS[:k]), rows))
               for k, (key, rows) in enumerate(zip(RECORD_KEYS, RECORD_ROWS))]
    return [str(p) for p in npz], [str(p) for p in records]


def epoch(columns, **options):
    """Every column of every batch of one epoch (shards shuffled unless `options` say), in
    order, with each batch's dataset indices."""
    options = {"shuffle_shards": True, "seed": 3, "num_workers": 2, **options}
    loader = sl.Loader(columns, batch_size=8, **options)
    return [({name: np.from_dlpack(batch[name]).copy() for name in batch.keys()},
             list(batch.indices)) for batch in loader]


def same_batches(got, expected):
    assert len(got) == len(expected)
    for (a, a_indices), (b, b_indices) in zip(got, expected):
        assert a.keys() == b.keys() and a_indices == b_indices
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_npz_urls_give_the_batches_of_the_files_read_locally(servers, objects):
    files, _ = objects
    local = sl.shards(files, inflate=True)
    expected = epoch(local)
    rows = sum(NPZ_ROWS)
    assert sum(len(b["y"]) for b, _ in expected) == rows
    data = pathlib.Path(servers["data"])
    for source in ("s3://stoke/pynpz/*.npz", [f"s3://stoke/{key}" for key in NPZ_KEYS],
                   [f"{servers['http']}/{key}" for key in NPZ_KEYS],
                   f"file://{data}/pynpz/*.npz"):
        stored = sl.shards(source)
        assert sorted(stored) == ["x", "y"]
        assert all(isinstance(c, sl.StoredColumn) and c.kind == "npz" for c in stored.values())
        assert stored["x"].rows == rows and stored["x"].row_shape == (3,)
        same_batches(epoch(stored), expected)
    # The rows in order are those of the files np.load reads, one after another.
    in_order = epoch(sl.shards("s3://stoke/pynpz/*.npz"), shuffle_shards=False, seed=0)
    for name in ("x", "y"):
        np.testing.assert_array_equal(np.concatenate([b[name] for b, _ in in_order]),
                                      np.concatenate([np.load(f)[name] for f in files]))
    # A prefix names .npz shards with member=, a dict of that array's column, as for files.
    only_x = sl.shards("s3://stoke/pynpz/", member="x")
    assert list(only_x) == ["x"]
    same_batches(epoch(only_x), epoch(sl.shards(files, member="x", inflate=True)))


def npz_manifest(files, path, array):
    shards = [{"key": key, "rows": int(np.load(f)[array].shape[0]),
               "bytes": pathlib.Path(f).stat().st_size} for key, f in zip(NPZ_KEYS, files)]
    path.write_text(json.dumps({"dtype": "float32", "row_shape": [3], "shards": shards}))
    return sum(shard["bytes"] for shard in shards)


def test_a_manifest_opens_npz_shards_without_a_read_and_a_node_cache_fetches_each_once(
        objects, tmp_path):
    files, _ = objects
    total = npz_manifest(files, tmp_path / "manifest.json", "x")
    expected = epoch(sl.shards(files, member="x", inflate=True))
    cache = tmp_path / "cache"
    options = dict(member="x", manifest=f"file://{tmp_path}/manifest.json", cache=cache,
                   cache_bytes=1 << 20)
    first = sl.shards("s3://stoke/pynpz/*.npz", **options)
    assert not cache.exists() or not [p for p in cache.iterdir() if not p.name.startswith(".")]
    second = sl.shards("s3://stoke/pynpz/*.npz", **options)
    same_batches(epoch(first), expected)
    same_batches(epoch(second), expected)
    fetches, fetched = (int(v) for v in (cache / ".totals").read_text().split())
    assert (fetches, fetched) == (len(NPZ_KEYS), total)


def test_a_npz_object_with_a_wrong_crc_is_refused_naming_its_url(objects, put, tmp_path):
    files, _ = objects
    payload = bytearray(npz_bytes(0, 7, compressed=False))
    x = (3 * np.arange(7)[:, None] + np.arange(3)).astype(np.float32).tobytes()
    at = bytes(payload).index(x) + 5  # in x's stored data: the CRC-32 no longer matches
    payload[at] ^= 0xFF
    put("pynpz-bad/part-0.npz", pathlib.Path(files[1]).read_bytes())
    put("pynpz-bad/part-1.npz", bytes(payload))
    with pytest.raises(sl.InputError, match=r"s3://stoke/pynpz-bad/part-1\.npz.*CRC-32 mismatch"):
        sl.shards("s3://stoke/pynpz-bad/*.npz")
    # With a manifest, opening reads nothing: the loader refuses the object when it reads it.
    shards = [{"key": f"pynpz-bad/part-{k}.npz", "rows": rows, "bytes": size}
              for k, (rows, size) in enumerate([(12, pathlib.Path(files[1]).stat().st_size),
                                                (7, len(payload))])]
    (tmp_path / "bad.json").write_text(json.dumps({"dtype": "float32", "row_shape": [3],
                                                   "shards": shards}))
    column = sl.shards("s3://stoke/pynpz-bad/*.npz", member="x",
                       manifest=f"file://{tmp_path}/bad.json")
    with pytest.raises(sl.DataError, match=r"batch failed at dataset index \d+ .* "
                                           r"s3://stoke/pynpz-bad/part-1\.npz.*CRC-32 mismatch"):
        epoch(column, shuffle_shards=False, seed=0)


def test_record_urls_give_the_records_of_the_files_read_locally(servers, objects):
    _, files = objects
    local = np.concatenate([np.fromfile(f, np.uint16).reshape(-1, *RECORD_SHAPE)
                            for f in files])
    assert len(local) == sum(RECORD_ROWS)
    one_by_one = np.concatenate([b["image"] for f in files
                                 for b, _ in epoch({"image": sl.records(f, np.uint16,
                                                                        RECORD_SHAPE)},
                                                   shuffle_shards=False, seed=0)])
    np.testing.assert_array_equal(one_by_one, local)
    data = pathlib.Path(servers["data"])
    for source in ("s3://stoke/pyrec/*.bin", "s3://stoke/pyrec/",
                   [f"{servers['http']}/{key}" for key in RECORD_KEYS],
                   f"file://{data}/pyrec/"):
        column = sl.records(source, np.uint16, RECORD_SHAPE, io_threads=2)
        assert isinstance(column, sl.StoredColumn) and column.kind == "records"
        assert column.rows == len(local) and column.row_shape == RECORD_SHAPE
        in_order = epoch({"image": column}, shuffle_shards=False, seed=0)
        np.testing.assert_array_equal(np.concatenate([b["image"] for b, _ in in_order]), local)
        for batch, indices in epoch({"image": column}):
            np.testing.assert_array_equal(batch["image"], local[indices])


def test_a_node_cache_fetches_each_record_object_once_for_two_loaders(objects, tmp_path):
    _, files = objects
    local = np.concatenate([np.fromfile(f, np.uint16).reshape(-1, *RECORD_SHAPE)
                            for f in files])
    cache = tmp_path / "cache"
    first = sl.records("s3://stoke/pyrec/", np.uint16, RECORD_SHAPE, cache=cache,
                       cache_bytes=1 << 20)
    second = sl.records("s3://stoke/pyrec/", np.uint16, RECORD_SHAPE, cache=cache,
                        cache_bytes=1 << 20, resident=4)
    for column in (first, second, first):
        for batch, indices in epoch({"x": column}):
            np.testing.assert_array_equal(batch["x"], local[indices])
    fetches, fetched = (int(v) for v in (cache / ".totals").read_text().split())
    total = sum(pathlib.Path(f).stat().st_size for f in files)
    assert (fetches, fetched) == (len(RECORD_KEYS), total)


def test_a_record_object_of_no_whole_records_is_refused_naming_its_url(objects, put):
    put("pyrec-bad/part-0.bin", record_bytes(0, 3))
    put("pyrec-bad/part-1.bin", record_bytes(3, 4) + b"\0" * 5)
    with pytest.raises(sl.InputError, match=r"s3://stoke/pyrec-bad/part-1\.bin.* holds 53 "
                                            r"bytes, not a multiple of the record size 12"):
        sl.records("s3://stoke/pyrec-bad/", np.uint16, RECORD_SHAPE)


def test_bad_options_are_refused_naming_them(objects, tmp_path):
    npz_files, record_files = objects
    with pytest.raises(sl.UsageError, match="describes one array: name it with member="):
        sl.shards("s3://stoke/pynpz/*.npz", manifest=f"file://{tmp_path}/manifest.json")
    with pytest.raises(sl.UsageError, match="not .npy and .npz"):
        sl.shards(["s3://stoke/npy/part-00.npy", "s3://stoke/pynpz/part-0.npz"])
    with pytest.raises(sl.UsageError, match=r"records\(cache=...\) needs cache_bytes"):
        sl.records("s3://stoke/pyrec/", np.uint16, cache=tmp_path / "cache")
    with pytest.raises(sl.UsageError, match="access does not apply"):
        sl.records("s3://stoke/pyrec/", np.uint16, access="read")
    with pytest.raises(sl.UsageError, match="apply to URLs"):
        sl.records(record_files[0], np.uint16, cache=tmp_path / "cache", cache_bytes=1 << 20)
    with pytest.raises(sl.StokeError, match="nothing-"):
        sl.records("s3://stoke/pyrec/nothing-*", np.uint16)


def test_a_build_without_libcurl_says_so_and_reads_files(monkeypatch, tmp_path):
    (tmp_path / "a.npz").write_bytes(npz_bytes(0, 4, compressed=True))
    (tmp_path / "a.bin").write_bytes(record_bytes(0, 5))
    monkeypatch.setattr(sl._native, "has_remote_stores", False)
    for url in ("s3://bucket/train/*.npz", "http://127.0.0.1:9/a.npz", "https://host/a.npz"):
        with pytest.raises(sl.NotBuiltError, match="built without libcurl.*libcurl4-openssl-dev"):
            sl.shards(url, member="x")
        with pytest.raises(sl.NotBuiltError, match="built without libcurl"):
            sl.records(url.replace(".npz", ".bin"), np.uint16, RECORD_SHAPE)
    assert sl.shards(f"file://{tmp_path}/a.npz")["y"].rows == 4
    assert sl.records(f"file://{tmp_path}/a.bin", np.uint16, RECORD_SHAPE).rows == 5
