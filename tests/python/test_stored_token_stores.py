"""stoke_loader.token_store() over URLs: ``s3://`` (SeaweedFS, which checks signatures; a prefix,
a glob, one store), ``http://`` (a range HTTP server) and ``file://`` give the batches of the same
token stores read locally, padded, packed and bucketed, alone and in a mixture; a node cache
fetches each object once for two loaders; a missing object, a corrupt or cut index and tokens of
another type are refused naming the URL (and the offset); a build without libcurl says so. The
servers are conftest.py's `servers`, started once for the run; the tests put their stores into
the bucket.

The stores' tokens name themselves: token t of document d of store k is k * 10000 + d * 100 + t."""

import pathlib
import struct

import numpy as np
import pytest

import stoke_loader as sl

LENGTHS = ([5, 17, 1, 30, 9, 12, 3], [22, 4, 8, 40, 2], [7, 15, 26, 11, 6, 19])
PREFIXES = [f"pytok/part-{k}" for k in range(len(LENGTHS))]

WAYS = {
    "pad": lambda store: sl.padded(store, 3, multiple=4, seed=3, num_workers=2),
    "concat": lambda store: sl.packed(store, 16, 2, shifted=True, window=2, seed=3),
    "first_fit": lambda store: sl.packed(store, 40, 2, method="first_fit", window=5, seed=3,
                                         num_workers=2),
    "bucket": lambda store: sl.bucketed(store, 96, buckets=3, window=7, seed=3),
}


def store_bytes(tmp_path, name, lengths, first, dtype=np.uint16):
    """The `.idx` and `.bin` bytes of a store of documents of `lengths`, written by
    stoke_loader's writer (token t of document d: first + d * 100 + t)."""
    writer = sl.TokenStoreWriter(tmp_path / name, dtype)
    for d, length in enumerate(lengths):
        writer.add_document(first + d * 100 + np.arange(length))
    writer.finish()
    return {ext: (tmp_path / f"{name}{ext}").read_bytes() for ext in (".idx", ".bin")}


def put_store(put, prefix, files):
    for ext, payload in files.items():
        put(prefix + ext, payload)


@pytest.fixture(scope="module")
def stores(servers, put, tmp_path_factory):
    """The stores of LENGTHS under `pytok/` of the bucket (and the data folder): their local
    prefixes and their objects' bytes in all."""
    folder = tmp_path_factory.mktemp("stores")
    total = 0
    for k, (prefix, lengths) in enumerate(zip(PREFIXES, LENGTHS)):
        files = store_bytes(folder, f"part-{k}", lengths, k * 10000)
        put_store(put, prefix, files)
        total += sum(len(payload) for payload in files.values())
    data = pathlib.Path(servers["data"])
    return [str(data / prefix) for prefix in PREFIXES], total


def epoch(loader):
    """Every column of every batch of one epoch, in order."""
    return [{name: np.from_dlpack(batch[name]).copy() for name in batch.keys()}
            for batch in loader]


def same_batches(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("way", sorted(WAYS))
def test_urls_give_the_batches_of_the_stores_read_locally(servers, stores, way):
    local, _ = stores
    make = WAYS[way]
    expected = epoch(make(sl.token_store(local)))
    assert expected and all(b["tokens"].size for b in expected)
    data = pathlib.Path(servers["data"])
    http = [f"{servers['http']}/{prefix}" for prefix in PREFIXES]
    for source in ("s3://stoke/pytok/", "s3://stoke/pytok/part-*.idx",
                   [f"s3://stoke/{prefix}.idx" for prefix in PREFIXES], http,
                   f"file://{data}/pytok/"):
        store = sl.token_store(source)
        assert len(store) == sum(map(len, LENGTHS)) and store.dtype == "uint16"
        assert store.token_count == sum(map(sum, LENGTHS))
        np.testing.assert_array_equal(store.lengths(), np.concatenate(LENGTHS))
        np.testing.assert_array_equal(store[8], 10000 + 100 + np.arange(4))
        same_batches(epoch(make(store)), expected)
    s3 = sl.token_store("s3://stoke/pytok/")
    assert [p.split()[0] for p in s3.prefixes] == [f"s3://stoke/{p}" for p in PREFIXES]


def test_a_mixture_of_stored_stores_gives_the_batches_of_the_local_ones(servers, stores):
    local, _ = stores

    def mixed(first, second):
        mixture = sl.mixture([(first, 2), (second, 1)], exhaustion="wrap", samples_per_epoch=24)
        return epoch(sl.packed(mixture, 32, 2, method="best_fit", seed=9))

    expected = mixed(local[:2], local[2:])
    same_batches(mixed([f"s3://stoke/{p}" for p in PREFIXES[:2]],
                       sl.token_store(f"{servers['http']}/{PREFIXES[2]}")), expected)


def test_a_node_cache_fetches_each_object_once_for_two_loaders(stores, tmp_path):
    local, total = stores
    expected = epoch(WAYS["pad"](sl.token_store(local)))
    cache = tmp_path / "cache"
    first = sl.token_store("s3://stoke/pytok/", cache=cache, cache_bytes=1 << 20, io_threads=2)
    second = sl.token_store("s3://stoke/pytok/", cache=cache, cache_bytes=1 << 20)
    same_batches(epoch(WAYS["pad"](first)), expected)
    same_batches(epoch(WAYS["pad"](second)), expected)
    same_batches(epoch(WAYS["bucket"](first)), epoch(WAYS["bucket"](sl.token_store(local))))
    fetches, fetched = (int(v) for v in (cache / ".totals").read_text().split())
    assert (fetches, fetched) == (2 * len(PREFIXES), total)  # each .idx and .bin once
    cached = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert len(cached) == 2 * len(PREFIXES) and sum(p.stat().st_size for p in cached) == total


def test_resident_bounds_what_a_node_cache_must_hold(stores, tmp_path):
    local, _ = stores
    expected = epoch(WAYS["first_fit"](sl.token_store(local)))
    bins = sorted(pathlib.Path(f"{prefix}.bin").stat().st_size for prefix in local)
    options = dict(cache=tmp_path / "cache", cache_bytes=bins[-1] + bins[-2])
    with pytest.raises(sl.UsageError, match=f"set max_bytes to at least {sum(bins)}"):
        sl.token_store("s3://stoke/pytok/", **options)  # every store resident, by default
    store = sl.token_store("s3://stoke/pytok/", resident=1, io_threads=0, **options)
    same_batches(epoch(WAYS["first_fit"](store)), expected)


def test_a_corrupt_index_is_refused_naming_its_url_and_the_offset(stores, put, tmp_path):
    files = store_bytes(tmp_path, "bad", [4, 6, 3], 0)
    idx = bytearray(files[".idx"])
    idx[38:42] = struct.pack("<i", -5)  # sequence 1's length
    put_store(put, "pytok-bad/part-0", {".idx": bytes(idx), ".bin": files[".bin"]})
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytok-bad/part-0\.idx.* at byte "
                                            r"offset 38: sequence 1 has length -5"):
        sl.token_store("s3://stoke/pytok-bad/")
    put_store(put, "pytok-cut/part-0", {".idx": files[".idx"][:20], ".bin": files[".bin"]})
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytok-cut/part-0\.idx.* at byte "
                                            r"offset \d+"):
        sl.token_store("s3://stoke/pytok-cut/part-0")
    idx = bytearray(files[".idx"])
    idx[17] = 99  # the dtype code
    put_store(put, "pytok-code/part-0", {".idx": bytes(idx), ".bin": files[".bin"]})
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytok-code/part-0\.idx.* at byte "
                                            r"offset 17: unknown dtype code 99"):
        sl.token_store("s3://stoke/pytok-code/part-0.bin")


def test_tokens_of_another_type_are_refused_naming_the_url(stores, put, tmp_path):
    put_store(put, "pytok-types/part-1", store_bytes(tmp_path, "wide", [4, 6], 0, np.int32))
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytok-types/part-1\.idx.* at byte "
                                            r"offset 17: its tokens are int32, not the uint16"):
        sl.token_store(["s3://stoke/pytok/part-0", "s3://stoke/pytok-types/part-1"])
    put_store(put, "pytok-long/part-0", store_bytes(tmp_path, "long", [4, 6], 0, np.int64))
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytok-long/part-0\.idx.* holds tokens "
                                            r"of type int64: sequences read integer tokens"):
        sl.token_store("s3://stoke/pytok-long/")


def test_missing_objects_and_bad_options_are_refused_naming_them(servers, stores, tmp_path):
    with pytest.raises(sl.InputError, match=r"s3://stoke/pytok/nothing\.idx"):
        sl.token_store("s3://stoke/pytok/nothing")
    with pytest.raises(sl.InputError, match=r"pytok/nothing\.idx"):
        sl.token_store(f"{servers['http']}/pytok/nothing")
    with pytest.raises(sl.StokeError, match="nothing-"):
        sl.token_store("s3://stoke/pytok/nothing-*")
    with pytest.raises(sl.InputError, match=r"no token store \(\.idx\) matches 's3://stoke/npy/"):
        sl.token_store("s3://stoke/npy/")
    with pytest.raises(sl.UsageError, match=r"token_store\(cache=...\) needs cache_bytes"):
        sl.token_store("s3://stoke/pytok/", cache=tmp_path / "cache")
    with pytest.raises(sl.UsageError, match="set max_bytes to at least"):
        sl.token_store("s3://stoke/pytok/", cache=tmp_path / "cache", cache_bytes=100)
    with pytest.raises(sl.UsageError, match="apply to URLs"):
        sl.token_store(stores[0], cache=tmp_path / "cache", cache_bytes=1 << 20)


def test_a_build_without_libcurl_says_so_and_reads_files(monkeypatch, tmp_path):
    store_bytes(tmp_path, "corpus", [3, 5], 0)
    monkeypatch.setattr(sl._native, "has_remote_stores", False)
    for url in ("s3://bucket/corpus/", "http://127.0.0.1:9/corpus", "https://host/corpus"):
        with pytest.raises(sl.NotBuiltError, match="built without libcurl.*libcurl4-openssl-dev"):
            sl.token_store(url)
    store = sl.token_store(f"file://{tmp_path}/corpus")
    assert len(store) == 2 and store.token_count == 8
