"""stoke_loader.shards() over URLs: ``s3://`` (SeaweedFS, which checks signatures),
``http://`` (a range HTTP server) and ``file://`` give the batches of the same ``.npy`` files read
locally; a manifest opens them without reading a shard; a node cache fetches each shard once
for two loaders. The servers are tests/storage/storage_servers.py's, started once for the run
(conftest.py's `servers`)."""

import json
import pathlib

import numpy as np
import pytest

import stoke_loader as sl

KEYS = [f"npy/part-{i:02d}.npy" for i in range(5)]


def epoch(column):
    loader = sl.Loader({"x": column}, batch_size=8, shuffle_shards=True, seed=3, num_workers=2)
    return [np.from_dlpack(batch["x"]).copy() for batch in loader]


def same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_urls_give_the_batches_of_the_files_read_locally(servers):
    data = pathlib.Path(servers["data"])
    expected = epoch(sl.shards([str(data / key) for key in KEYS]))
    assert sum(len(b) for b in expected) == 163
    s3 = sl.shards("s3://stoke/npy/*.npy")
    assert isinstance(s3, sl.StoredColumn) and s3.rows == 163 and s3.row_shape == (8,)
    same_batches(epoch(s3), expected)
    same_batches(epoch(sl.shards([f"{servers['http']}/{key}" for key in KEYS])), expected)
    same_batches(epoch(sl.shards(f"file://{data}/npy/")), expected)


def manifest_of(data, path):
    shards = [{"key": key, "rows": int(np.load(data / key, mmap_mode="r").shape[0]),
               "bytes": (data / key).stat().st_size} for key in KEYS]
    path.write_text(json.dumps({"dtype": "float32", "row_shape": [8], "shards": shards}))
    return sum(shard["bytes"] for shard in shards)


def test_a_node_cache_fetches_each_shard_once_for_two_loaders(servers, tmp_path):
    data = pathlib.Path(servers["data"])
    total = manifest_of(data, tmp_path / "manifest.json")
    expected = epoch(sl.shards([str(data / key) for key in KEYS]))
    cache = tmp_path / "cache"
    options = dict(manifest=f"file://{tmp_path}/manifest.json", cache=cache, cache_bytes=1 << 20)
    first = sl.shards("s3://stoke/npy/", **options)
    assert not cache.exists() or not [p for p in cache.iterdir() if not p.name.startswith(".")]
    second = sl.shards("s3://stoke/npy/", **options)
    same_batches(epoch(first), expected)
    same_batches(epoch(second), expected)
    same_batches(epoch(first), expected)
    fetches, fetched = (int(v) for v in (cache / ".totals").read_text().split())
    assert (fetches, fetched) == (len(KEYS), total)
    cached = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert len(cached) == len(KEYS) and sum(p.stat().st_size for p in cached) == total


def test_bad_urls_and_bounds_are_refused_naming_them(servers, tmp_path):
    with pytest.raises(sl.StokeError, match="nothing-"):
        sl.shards("s3://stoke/npy/nothing-*.npy")
    with pytest.raises(sl.UsageError, match="cache_bytes"):
        sl.shards("s3://stoke/npy/", cache=tmp_path / "cache")
    manifest_of(pathlib.Path(servers["data"]), tmp_path / "manifest.json")
    with pytest.raises(sl.UsageError, match="set max_bytes to at least"):
        sl.shards("s3://stoke/npy/", manifest=f"file://{tmp_path}/manifest.json",
                  cache=tmp_path / "cache", cache_bytes=100)
    with pytest.raises(sl.UsageError, match="no byte store serves scheme 'gs'"):
        sl.shards("gs://bucket/npy/")
