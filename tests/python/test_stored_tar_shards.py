"""stoke_loader.tar_shards() over URLs: ``s3://`` (SeaweedFS, which checks signatures),
``http://`` (a range HTTP server) and ``file://`` give the samples of the same WebDataset tar
shards read locally, in the same order; a manifest opens them without reading a shard; a node
cache fetches each shard once for two loaders; a damaged shard, a shard unlike its manifest and
a bound too small are refused naming the URL (and the offset). The servers are conftest.py's
`servers`, started once for the run; each test puts its shards into the bucket."""

import io
import json
import pathlib
import tarfile

import numpy as np
import pytest

import stoke_loader as sl

Image = pytest.importorskip("PIL.Image")
pytestmark = pytest.mark.skipif(not sl._native.has_images, reason="built without images")

COUNTS = (5, 3, 6)  # samples of each shard


def png_bytes(seed):
    image = np.random.default_rng(seed).integers(0, 256, (6, 7, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG")
    return out.getvalue()


def tar_bytes(first, count):
    """A WebDataset tar of `count` samples numbered from `first`: a PNG and its label."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for index in range(first, first + count):
            for name, payload in ((f"s{index:03d}.png", png_bytes(index)),
                                  (f"s{index:03d}.cls", str(index % 7).encode())):
                member = tarfile.TarInfo(name)
                member.size = len(payload)
                archive.addfile(member, io.BytesIO(payload))
    return out.getvalue()


@pytest.fixture(scope="module")
def tars(servers, put):
    """Three tar shards under `pytar/` of the bucket (and the data folder): their keys."""
    keys, first = [], 0
    for k, count in enumerate(COUNTS):
        keys.append(f"pytar/shard-{k}.tar")
        put(keys[-1], tar_bytes(first, count))
        first += count
    return keys


def epoch(images):
    """One epoch of a loader over `images`, shards shuffled: the batches' indices, images and
    labels, in the order they came."""
    loader = sl.Loader(images, batch_size=4, shuffle_shards=True, seed=5, num_workers=2)
    out = []
    for batch in loader:
        mask = batch.mask
        out.append((batch.indices[mask].copy(), np.from_dlpack(batch["image"])[mask].copy(),
                    np.from_dlpack(batch["label"])[mask].copy()))
    return out


def same_epochs(got, expected):
    assert len(got) == len(expected)
    for (i, x, y), (j, u, v) in zip(got, expected):
        np.testing.assert_array_equal(i, j)
        np.testing.assert_array_equal(x, u)
        np.testing.assert_array_equal(y, v)


def local_epoch(servers, tars):
    return epoch(sl.tar_shards([pathlib.Path(servers["data"]) / key for key in tars], 4,
                               crop="random", flip=0.5))


def test_urls_give_the_samples_of_the_shards_read_locally(servers, tars):
    expected = local_epoch(servers, tars)
    assert sorted(int(i) for batch in expected for i in batch[0]) == list(range(sum(COUNTS)))
    s3 = sl.tar_shards("s3://stoke/pytar/*.tar", 4, crop="random", flip=0.5)
    assert s3.num_samples == sum(COUNTS)
    assert [p.split()[0] for p in s3.paths] == [f"s3://stoke/{key}" for key in tars]
    assert s3.key(5) == "s005"
    same_epochs(epoch(s3), expected)
    http = [f"{servers['http']}/{key}" for key in tars]
    same_epochs(epoch(sl.tar_shards(http, 4, crop="random", flip=0.5)), expected)
    data = pathlib.Path(servers["data"])
    same_epochs(epoch(sl.tar_shards(f"file://{data}/pytar/", 4, crop="random", flip=0.5)),
                expected)


def manifest_of(servers, tars, path, rows=None):
    """Writes the manifest of `tars` to `path` (`rows` overrides the samples of each); returns
    the shards' bytes."""
    data = pathlib.Path(servers["data"])
    shards = [{"key": key, "rows": (rows or COUNTS)[k], "bytes": (data / key).stat().st_size}
              for k, key in enumerate(tars)]
    path.write_text(json.dumps(shards))
    return sum(shard["bytes"] for shard in shards)


def test_a_manifest_opens_without_a_read_and_a_node_cache_fetches_each_shard_once(
        servers, tars, tmp_path):
    total = manifest_of(servers, tars, tmp_path / "manifest.json")
    expected = local_epoch(servers, tars)
    cache = tmp_path / "cache"
    options = dict(manifest=f"file://{tmp_path}/manifest.json", cache=cache, cache_bytes=1 << 20,
                   crop="random", flip=0.5)
    first = sl.tar_shards("s3://stoke/pytar/", 4, **options)
    second = sl.tar_shards("s3://stoke/pytar/", 4, **options)
    assert not cache.exists() or not [p for p in cache.iterdir() if not p.name.startswith(".")]
    same_epochs(epoch(first), expected)
    same_epochs(epoch(second), expected)
    same_epochs(epoch(first), expected)
    fetches, fetched = (int(v) for v in (cache / ".totals").read_text().split())
    assert (fetches, fetched) == (len(tars), total)


def test_a_damaged_shard_is_refused_naming_its_url_and_the_offset(servers, tars, put):
    whole = tar_bytes(100, 4)
    put("pytar-bad/shard-0.tar", whole[:len(whole) // 2 + 100])
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytar-bad/shard-0\.tar.*offset \d+"):
        sl.tar_shards("s3://stoke/pytar-bad/", 4)


def test_a_shard_unlike_its_manifest_is_refused_naming_its_url(servers, tars, tmp_path):
    manifest_of(servers, tars, tmp_path / "manifest.json", rows=(5, 4, 6))
    images = sl.tar_shards("s3://stoke/pytar/", 4, manifest=f"file://{tmp_path}/manifest.json")
    assert images.num_samples == 15
    with pytest.raises(sl.StokeError,
                       match=r"dataset index 5 .*s3://stoke/pytar/shard-1\.tar .*holds 3 "
                             r"samples; the manifest says 4"):
        for _ in sl.Loader(images, batch_size=4):
            pass


def test_bad_options_and_bounds_are_refused_naming_them(servers, tars, tmp_path):
    with pytest.raises(sl.StokeError, match="nothing-"):
        sl.tar_shards("s3://stoke/pytar/nothing-*.tar", 4)
    with pytest.raises(sl.UsageError, match=r"tar_shards\(cache=...\) needs cache_bytes"):
        sl.tar_shards("s3://stoke/pytar/", 4, cache=tmp_path / "cache")
    manifest_of(servers, tars, tmp_path / "manifest.json")
    with pytest.raises(sl.UsageError, match="set max_bytes to at least"):
        sl.tar_shards("s3://stoke/pytar/", 4, manifest=f"file://{tmp_path}/manifest.json",
                      cache=tmp_path / "cache", cache_bytes=100)
    with pytest.raises(sl.UsageError, match="apply to URLs"):
        sl.tar_shards(pathlib.Path(servers["data"]) / tars[0], 4, cache=tmp_path / "cache",
                      cache_bytes=1 << 20)
