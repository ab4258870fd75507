"""The peers of bench/storage_bench on the same server and data (scripts/storage-bench runs
this with its venv): the images of bench/storage_workload.py read from SeaweedFS on
127.0.0.1, each loader at its usual idiom, 2 workers, batches of 64 stacked into one float32
tensor. Prints `peer <name>: <N> samples/s ...` for each peer that ran, and for each that
could not, why (with the error), at loopback and over the limited link; with --stoke
(storage_bench's output), stoke's samples/s over the best peer's at each, as `target` lines
(issue #38: at least 2).

- WebDataset over the tar shards (`bench-tar/`), each read through fsspec's s3fs (WebDataset
  1.0 has no s3:// reader of its own; its docs pipe `aws s3 cp`, which is not installed here)
  with 8 MiB read-ahead blocks, in a PyTorch DataLoader.
- s3torchconnector's `S3IterableDataset` over the `.npy` shards (`bench/`), each shard an
  object parsed with numpy, in a PyTorch DataLoader.
- MosaicML Streaming's `StreamingDataset` over the same images written as MDS shards of
  about the same size, in a PyTorch DataLoader (one epoch: it keeps what it downloaded).
- litdata's `StreamingDataset` over the same images written by `litdata.optimize` as chunks
  of about the same size, in its `StreamingDataLoader` (one epoch, for the same reason).
"""
import argparse
import functools
import io
import json
import os
import time
import traceback


TRIES = 3
"""How often a peer that fails (with an error, not a wrong sample) is run again, each time with
a fresh loader and cache folder: MosaicML Streaming's reader fails now and then here with
`IndexError: Relative sample index N is not present in the shard` (one try in three at
loopback, in a check of this script), and a run that fails once says so and is measured on a
later try."""


def stacked(batch):
    """A batch of images as one float32 array [rows, values]."""
    import numpy as np

    return np.stack([np.asarray(image, dtype=np.float32).reshape(-1) for image in batch])


def why(error):
    """What `error` says, short: its first line and, for an error that carries a traceback
    (a DataLoader worker's), that traceback's last lines, which name the failing call."""
    lines = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()
    if len(lines) <= 8:
        return "\n  ".join(lines)
    return "\n  ".join(lines[:1] + ["..."] + lines[-6:])


def measure(name, make_loader, samples, epochs):
    """Runs `epochs` epochs of `make_loader()`; prints samples/s (over all epochs), the first
    batch and whether every epoch brought every sample once."""
    start = time.monotonic()
    loader = make_loader()
    first_batch, exact, rates = None, True, []
    for _ in range(epochs):
        seen = [0] * samples
        began, rows = time.monotonic(), 0
        for batch in loader:
            if first_batch is None:
                first_batch = time.monotonic() - start
            for index in batch[:, 0]:
                seen[int(index)] += 1
            rows += len(batch)
        rates.append(rows / (time.monotonic() - began))
        exact = exact and all(count == 1 for count in seen)
    print(f"peer {name}: {sum(rates) / len(rates):.0f} samples/s, first batch "
          f"{first_batch * 1e3:.1f} ms, every sample once: {'yes' if exact else 'NO'}", flush=True)
    return sum(rates) / len(rates)


def webdataset_loader(servers, endpoint, keys, batch, workers):
    import s3fs
    import torch.utils.data
    import webdataset as wds
    from webdataset.gopen import gopen_schemes

    def open_s3(url, mode="rb", bufsize=8192):  # WebDataset has no s3:// reader: s3fs's
        del bufsize
        filesystem = s3fs.S3FileSystem(key=servers["access_key"], secret=servers["secret_key"],
                                       client_kwargs={"endpoint_url": servers[endpoint]})
        return filesystem.open(url, mode, block_size=8 << 20, cache_type="readahead")

    gopen_schemes["s3"] = open_s3
    urls = [f"s3://{servers['bucket']}/{key}" for key in keys if key.startswith("bench-tar/")]
    dataset = (wds.WebDataset(urls, shardshuffle=len(urls), nodesplitter=None,
                              workersplitter=wds.split_by_worker, empty_check=False)
               .decode().to_tuple("npy").map(lambda sample: sample[0])
               .batched(batch, collation_fn=stacked))
    return lambda: torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers)


def s3torchconnector_loader(servers, endpoint, keys, batch, workers):
    import numpy as np
    import torch.utils.data
    from s3torchconnector import S3ClientConfig, S3IterableDataset

    os.environ.update(AWS_ACCESS_KEY_ID=servers["access_key"],
                      AWS_SECRET_ACCESS_KEY=servers["secret_key"])
    urls = [f"s3://{servers['bucket']}/{key}" for key in keys if key.startswith("bench/")]

    def rows(item):
        return np.load(io.BytesIO(item.read()))

    shards = S3IterableDataset.from_objects(
        urls, region="us-east-1", endpoint=servers[endpoint], transform=rows,
        s3client_config=S3ClientConfig(force_path_style=True), enable_sharding=True)

    class Images(torch.utils.data.IterableDataset):
        def __iter__(self):
            pending = []
            for shard in shards:
                for image in shard:
                    pending.append(image)
                    if len(pending) == batch:
                        yield stacked(pending)
                        pending = []
            if pending:
                yield stacked(pending)

    return lambda: torch.utils.data.DataLoader(Images(), batch_size=None, num_workers=workers)


def streaming_loader(servers, endpoint, keys, batch, workers):
    """MosaicML Streaming: the images written once as MDS shards into the bucket (its
    MDSWriter, not timed), read by a StreamingDataset into a fresh local folder: one epoch,
    since later ones read that local copy."""
    import tempfile

    import numpy as np
    import torch.utils.data
    from streaming import MDSWriter, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    os.environ.update(S3_ENDPOINT_URL=servers[endpoint], AWS_ACCESS_KEY_ID=servers["access_key"],
                      AWS_SECRET_ACCESS_KEY=servers["secret_key"])
    remote = f"s3://{servers['bucket']}/bench-mds"
    data = servers["data"]
    if not os.path.exists(os.path.join(data, "bench-mds-written")):
        with MDSWriter(out=remote, columns={"x": "ndarray:float32"}, size_limit=6 << 20,
                       compression=None) as writer:
            for key in sorted(k for k in keys if k.startswith("bench/")):
                for image in np.load(os.path.join(data, key)):
                    writer.write({"x": image})
        open(os.path.join(data, "bench-mds-written"), "w").close()
    clean_stale_shared_memory()

    def make():
        dataset = StreamingDataset(remote=remote, local=tempfile.mkdtemp(), shuffle=True,
                                   batch_size=batch)
        return torch.utils.data.DataLoader(
            dataset, batch_size=batch, num_workers=workers,
            collate_fn=lambda samples: stacked([sample["x"] for sample in samples]))

    return make


def put_folder(servers, folder, prefix):
    """Puts every file of `folder` into the bucket under `prefix` (through SeaweedFS's filer)."""
    import urllib.parse
    import urllib.request

    for name in sorted(os.listdir(folder)):
        url = f"{servers['filer']}/buckets/{servers['bucket']}/{prefix}/{urllib.parse.quote(name)}"
        with open(os.path.join(folder, name), "rb") as file:
            request = urllib.request.Request(url, data=file.read(), method="PUT")
        urllib.request.urlopen(request, timeout=60).close()


def litdata_images(data, key):
    """The images of the `.npy` shard `key` under `data`, as litdata's `optimize` takes them
    (a function it can pickle into its worker processes)."""
    import numpy as np

    for image in np.load(os.path.join(data, key)):
        yield {"x": image}


def litdata_loader(servers, endpoint, keys, batch, workers):
    """litdata: the images written once (not timed) by `litdata.optimize` in its own chunked
    format, chunks of about the shards' size, and put into the bucket; read by its
    `StreamingDataset` over the s3:// URL with the endpoint and keys in `storage_options` (as its
    docs tell for an S3 server of one's own), in its `StreamingDataLoader`, into a fresh cache
    folder: one epoch, since later ones read that local copy."""
    import tempfile

    import numpy as np
    from litdata import StreamingDataLoader, StreamingDataset, optimize
    from litdata.streaming import downloader

    # litdata fetches chunks with obstore, whose client refuses an http:// endpoint unless told
    # to allow it, which litdata does not do (its `storage_options` reach boto3 only): allowed
    # here, the one setting a user of such a server has to add.
    downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True

    data = servers["data"]
    if not os.path.exists(os.path.join(data, "bench-litdata-written")):
        written = os.path.join(data, "bench-litdata")

        optimize(fn=functools.partial(litdata_images, data),
                 inputs=sorted(k for k in keys if k.startswith("bench/")), output_dir=written,
                 chunk_bytes="6MB", num_workers=1, mode="overwrite", verbose=False,
                 start_method="fork")  # its default, spawn, is set for the whole process
        put_folder(servers, written, "bench-litdata")
        open(os.path.join(data, "bench-litdata-written"), "w").close()
    storage_options = {"endpoint_url": servers[endpoint],
                       "aws_access_key_id": servers["access_key"],
                       "aws_secret_access_key": servers["secret_key"]}

    def make():
        dataset = StreamingDataset(f"s3://{servers['bucket']}/bench-litdata",
                                   cache_dir=tempfile.mkdtemp(), shuffle=True,
                                   storage_options=storage_options)
        return StreamingDataLoader(
            dataset, batch_size=batch, num_workers=workers,
            collate_fn=lambda samples: stacked([sample["x"] for sample in samples]))

    return make


def stoke_rate(path, row):
    """The samples/s of the line of storage_bench's output at `path` that begins with `row`."""
    with open(path, encoding="utf-8") as file:
        line = next(line for line in file if line.startswith(row))
    return float(line.split("samples/s")[0].split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", required=True, help="servers.json of storage_servers.py")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--stoke", help="storage_bench's output, for the ratio over the peers")
    args = parser.parse_args()
    with open(args.servers, encoding="utf-8") as file:
        servers = json.load(file)
    keys = servers["keys"]
    samples = int(os.environ.get("STOKE_STORAGE_BENCH_SHARDS", "16")) * int(
        os.environ.get("STOKE_STORAGE_BENCH_ROWS", "128"))
    link = servers["limited_s3_bytes_per_second"]
    sample_bytes = 3 * 64 * 64 * 4
    for endpoint, where, stoke_row in (("s3", "loopback", "S3 at loopback:"),
                                       ("limited_s3", "limited link", "S3 over a")):
        rates = {}
        for name, make, epochs in (("webdataset", webdataset_loader, args.epochs),
                                   ("s3torchconnector", s3torchconnector_loader, args.epochs),
                                   ("mosaicml-streaming", streaming_loader, 1),
                                   ("litdata", litdata_loader, 1)):
            for attempt in range(1, TRIES + 1):
                try:
                    loader = make(servers, endpoint, keys, args.batch, args.workers)
                    rates[name] = measure(f"{name}, {where}", loader, samples, epochs)
                    break
                except Exception as error:  # noqa: BLE001: a peer that cannot run says why
                    verdict = ("could not run against this server" if attempt == TRIES else
                               "failed, tried again")
                    print(f"peer {name}, {where}: try {attempt} of {TRIES} {verdict}: "
                          f"{why(error)}", flush=True)
        if endpoint == "limited_s3":
            for name, rate in rates.items():
                print(f"peer {name}, limited link: {rate * sample_bytes / link:.2f} of the link")
        if args.stoke and endpoint == "s3" and "webdataset" in rates:
            tar = stoke_rate(args.stoke, "S3 tar shards at loopback:")
            print(f"stoke's tar shards over WebDataset's (the same tars), loopback: "
                  f"{tar / rates['webdataset']:.3g}x", flush=True)
        if args.stoke and rates:
            stoke = stoke_rate(args.stoke, stoke_row)
            best = max(rates, key=rates.get)
            ratio = stoke / rates[best]
            print(f"target stoke over the best peer ({best}), {where}: {ratio:.3g}x (>= 2x): "
                  + ("met" if ratio >= 2 else f"missed by {100 * (2 - ratio) / 2:.0f}%"),
                  flush=True)


if __name__ == "__main__":
    main()
