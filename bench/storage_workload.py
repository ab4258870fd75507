"""The workload of bench/storage_bench, for tests/storage/storage_servers.py (`start DIR
bench/storage_workload.py`): `.npy` shards of decoded images (float32, 3 x 64 x 64, as a
model takes them) under `bench/`, the same images as WebDataset tar shards under `bench-tar/`
(a `.npy` member and a `.cls` member, its index, a sample: for stoke's tar shards and the
peers), token stores of about the same bytes under `bench-tokens/`, and the proxies the benchmark reads through: one that only
forwards, one that limits the bandwidth to a link's, and one that fails 5% of the requests.

The first value of every image is its index in the data set, so that a reader can check that
every sample came once and in which order. Sizes come from the environment:
STOKE_STORAGE_BENCH_SHARDS (16), STOKE_STORAGE_BENCH_ROWS (128 images a shard, 6 MiB) and
STOKE_STORAGE_BENCH_LINK_GBIT (1, the limited link)."""
import importlib.util
import io
import os
import pathlib
import tarfile

import numpy as np

SHARDS = int(os.environ.get("STOKE_STORAGE_BENCH_SHARDS", "16"))
ROWS = int(os.environ.get("STOKE_STORAGE_BENCH_ROWS", "128"))
IMAGE = (3, 64, 64)
LINK_BYTES_PER_SECOND = float(os.environ.get("STOKE_STORAGE_BENCH_LINK_GBIT", "1")) * 1e9 / 8

PROXIES = {
    "plain_s3": {},
    "limited_s3": {"bytes_per_second": LINK_BYTES_PER_SECOND},
    "faults_s3": {"rate": 0.05, "kinds": ("slowdown", "cut", "reset")},
}


def write_tar(path, images, first):
    """A WebDataset tar shard of `images`, numbered from `first`: members `<index>.npy` (the
    image) and `<index>.cls` (its index, the label stoke's tar shards read) for each."""
    with tarfile.open(path, "w") as archive:
        for i, image in enumerate(images):
            npy = io.BytesIO()
            np.save(npy, image)
            for extension, payload in ((".npy", npy.getvalue()), (".cls", str(first + i).encode())):
                member = tarfile.TarInfo(f"{first + i:07d}{extension}")
                member.size = len(payload)
                archive.addfile(member, io.BytesIO(payload))


def token_store_writer():
    """stoke_loader's numpy writer of token stores, loaded by its path (no native module)."""
    path = (pathlib.Path(__file__).resolve().parents[1] / "python" / "src" / "stoke_loader"
            / "token_store_writer.py")
    spec = importlib.util.spec_from_file_location("token_store_writer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TokenStoreWriter


def write_token_stores(data):
    """SHARDS token stores of int32 tokens under `data`/bench-tokens, ROWS sequences each, of
    about an image's bytes on average (6 to 18 thousand tokens); the first token of sequence i
    is i. Returns their keys (`.bin` and `.idx`)."""
    writer_class = token_store_writer()
    keys = []
    for shard in range(SHARDS):
        prefix = f"bench-tokens/part-{shard:03d}"
        (data / prefix).parent.mkdir(parents=True, exist_ok=True)
        writer = writer_class(str(data / prefix), np.int32)
        for index in range(shard * ROWS, (shard + 1) * ROWS):
            tokens = np.full(6144 + (index * 7919) % 12288, index % 50000, dtype=np.int32)
            tokens[0] = index
            writer.add_document(tokens)
        writer.finish()
        keys += [prefix + ".bin", prefix + ".idx"]
    return keys


def write_files(data):
    """Writes the shards under `data`/bench and `data`/bench-tar, and the token stores under
    `data`/bench-tokens, and returns their keys."""
    generator = np.random.default_rng(38)
    keys = []
    for shard in range(SHARDS):
        images = generator.random((ROWS, *IMAGE), dtype=np.float32)
        images.reshape(ROWS, -1)[:, 0] = np.arange(shard * ROWS, (shard + 1) * ROWS)
        key = f"bench/shard-{shard:03d}.npy"
        (data / key).parent.mkdir(parents=True, exist_ok=True)
        np.save(data / key, images)
        tar_key = f"bench-tar/shard-{shard:03d}.tar"
        (data / tar_key).parent.mkdir(parents=True, exist_ok=True)
        write_tar(data / tar_key, images, shard * ROWS)
        keys += [key, tar_key]
    return keys + write_token_stores(data)
