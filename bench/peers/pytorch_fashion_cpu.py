"""The main job (examples/fashion_mnist, `./scripts/demo`) side by side with PyTorch on CPU.

stoke trains an MLP 784-256-128-10 (ReLU, softmax cross-entropy on the mean loss,
He-initialised weights, zero biases) with Adam (lr 1e-3, betas 0.9 and 0.999, eps 1e-8, no
weight decay; here torch.optim.Adam with fused=True, its fastest form on CPU) and a cosine
schedule: a linear warm-up over half an epoch (step s < W gets lr * (s + 1) / W), then a cosine
from lr down to lr / 20 at the last step; the images are normalised as
(b / 255 - 0.2860) / 0.3530; 2 CPU devices with batches of 64 each (a global batch of 128),
shuffled every epoch, the last incomplete round dropped (468 steps an epoch), 10 epochs, seed 7,
and the test set evaluated after every epoch.

This script runs the stoke binary first (given with --stoke), then trains the same thing with
PyTorch on CPU in the three ways an expert would write it:
  dataloader: torch.utils.data.DataLoader over a TensorDataset, batches of 128, shuffle=True,
              drop_last=True; num_workers 0 and 2 (persistent) are both run, the faster counts;
              one process, torch.set_num_threads(2);
  slicing:    the in-memory tensors, a torch.randperm per epoch, each batch the next 128 indices
              of it; one process, torch.set_num_threads(2);
  ddp:        DistributedDataParallel on 2 processes (gloo, torch.multiprocessing.spawn), a
              DistributedSampler with set_epoch per process and batches of 64 per process;
              torch.set_num_threads(1) in each.
Every PyTorch variant reads the IDX files itself and normalises the training set once, to
float32, before the first epoch (so that is in its run time, not in its samples/s).

samples/s is an epoch's training samples over the wall time of its training steps (the
evaluation after it left out), averaged over the epochs after the first, for stoke as for
PyTorch; run is the whole wall time (for stoke the process, from start to exit; for PyTorch the
variant: reading the files, training, evaluating after every epoch; with DDP, starting the
processes too). Per-epoch lines are indented; the summary lines are
  <variant>: <S> samples/s, run <T> s, test accuracy <A>
and, last, `ratio stoke_over_pytorch_<variant>: <stoke's S / the variant's S>`.
"""
import argparse
import math
import re
import socket
import statistics
import subprocess
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from fashion_idx import find, read_idx

MEAN, STD = 0.2860, 0.3530


def load(folder, limit):
    """Training and test images as normalised float32 rows, labels as int64."""
    def images(name):
        x = torch.from_numpy(read_idx(find(folder, name)).reshape(-1, 784).copy())
        return (x.float() / 255.0 - MEAN) / STD

    def labels(name):
        return torch.from_numpy(read_idx(find(folder, name)).astype(np.int64))

    x_train, y_train = images("train-images-idx3-ubyte"), labels("train-labels-idx1-ubyte")
    if limit:
        x_train, y_train = x_train[:limit].contiguous(), y_train[:limit].contiguous()
    return (x_train, y_train, images("t10k-images-idx3-ubyte"), labels("t10k-labels-idx1-ubyte"))


def model(seed):
    """784-256-128-10 with ReLU, He-initialised weights (variance 2 / fan-in), zero biases."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            torch.nn.init.zeros_(layer.bias)
    return net


def cosine(lr, epochs, steps_per_epoch):
    """stoke's CosineLr as a LambdaLR factor: warm-up over half an epoch, then a cosine from lr
    to lr / 20 at step epochs * steps_per_epoch."""
    total, warmup, floor = epochs * steps_per_epoch, steps_per_epoch // 2, 1.0 / 20

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        if step >= total:
            return floor
        progress = (step - warmup) / (total - warmup)
        return floor + (1.0 - floor) * (1.0 + math.cos(math.pi * progress)) / 2.0
    return factor


def optimizer_and_schedule(net, args, steps_per_epoch):
    # fused: one kernel for every parameter's update, the fastest Adam on CPU (same arithmetic).
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                                 fused=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, cosine(args.lr, args.epochs, steps_per_epoch))
    return optimizer, schedule


def train_step(net, optimizer, schedule, xb, yb):
    loss = torch.nn.functional.cross_entropy(net(xb), yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    schedule.step()


def evaluate(net, x_test, y_test):
    with torch.no_grad():
        return (net(x_test).argmax(1) == y_test).float().mean().item()


def rate(rates):
    """The mean samples/s of the epochs after the first (the only one if there is one)."""
    return statistics.mean(rates[1:] if len(rates) > 1 else rates)


def epoch_line(epoch, epochs, samples, seconds, accuracy, lr):
    return (f"  epoch {epoch}/{epochs}: {samples / seconds:.0f} samples/s, {seconds:.2f} s, "
            f"test accuracy {accuracy:.4f}, lr {lr:.4g}")


def single_process(args, name, batches):
    """Trains in this process; `batches(x, y)` is a function of the epoch giving its batches.
    Returns the samples/s, the run's seconds and the final test accuracy."""
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load(args.data, args.limit)
    batch = args.batch_size * args.devices
    steps = len(x_train) // batch
    net = model(args.seed)
    optimizer, schedule = optimizer_and_schedule(net, args, steps)
    feed = batches(x_train, y_train)
    rates, accuracy = [], 0.0
    print(f"# {name}", flush=True)
    for epoch in range(args.epochs):
        began = time.perf_counter()
        done = 0
        for xb, yb in feed(epoch):
            train_step(net, optimizer, schedule, xb, yb)
            done += 1
        seconds = time.perf_counter() - began
        assert done == steps, f"{name}: {done} steps, expected {steps}"
        accuracy = evaluate(net, x_test, y_test)
        rates.append(steps * batch / seconds)
        print(epoch_line(epoch + 1, args.epochs, steps * batch, seconds, accuracy,
                         lr_of_last_step(schedule)), flush=True)
    return rate(rates), time.perf_counter() - start, accuracy


def lr_of_last_step(schedule):
    """The learning rate the epoch's last step used (stoke prints that one)."""
    return schedule.base_lrs[0] * schedule.lr_lambdas[0](schedule.last_epoch - 1)


def dataloader_batches(args, workers):
    def make(x, y):
        generator = torch.Generator()
        generator.manual_seed(args.seed)
        loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size * args.devices,
                            shuffle=True, drop_last=True, num_workers=workers,
                            persistent_workers=workers > 0, generator=generator)
        return lambda _epoch: loader
    return make


def slicing_batches(args):
    def make(x, y):
        batch = args.batch_size * args.devices
        n = (len(x) // batch) * batch
        generator = torch.Generator()
        generator.manual_seed(args.seed)

        def epoch_batches(_epoch):
            order = torch.randperm(len(x), generator=generator)
            for k in range(0, n, batch):
                idx = order[k:k + batch]
                yield x[idx], y[idx]
        return epoch_batches
    return make


def ddp_worker(rank, args, port, results):
    start = time.perf_counter()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.devices)
    x_train, y_train, x_test, y_test = load(args.data, args.limit)
    dataset = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(dataset, num_replicas=args.devices, rank=rank, shuffle=True,
                                 seed=args.seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    steps = len(loader)
    net = DistributedDataParallel(model(args.seed))
    optimizer, schedule = optimizer_and_schedule(net, args, steps)
    samples = steps * args.batch_size * args.devices
    rates, accuracy = [], 0.0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        dist.barrier()
        began = time.perf_counter()
        for xb, yb in loader:
            train_step(net, optimizer, schedule, xb, yb)
        dist.barrier()
        seconds = time.perf_counter() - began
        rates.append(samples / seconds)
        if rank == 0:
            accuracy = evaluate(net.module, x_test, y_test)
            print(epoch_line(epoch + 1, args.epochs, samples, seconds, accuracy,
                             lr_of_last_step(schedule)), flush=True)
        dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        results.put((rate(rates), time.perf_counter() - start, accuracy))


def ddp(args):
    print(f"# pytorch DDP, {args.devices} processes x 1 thread (gloo, DistributedSampler, "
          f"batch {args.batch_size} per process)", flush=True)
    start = time.perf_counter()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(ddp_worker, args=(args, port, results), nprocs=args.devices, join=True)
    samples_per_s, _, accuracy = results.get()
    return samples_per_s, time.perf_counter() - start, accuracy


def run_stoke(args):
    """Runs the stoke example, echoes its output indented; its samples/s, run time, accuracy."""
    command = [args.stoke, "--epochs", str(args.epochs), "--seed", str(args.seed),
               "--devices", str(args.devices), "--batch-size", str(args.batch_size),
               "--data", args.data]
    print(f"# stoke: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    rates, accuracy = [], None
    for line in out.splitlines():
        print(f"  {line}")
        m = re.match(r"epoch (\d+)/\d+: .*?\| (\d+(?:\.\d+)?) samples/s \|", line)
        if m:
            rates.append(float(m.group(2)))
        m = re.match(r"test accuracy: ([0-9.]+)", line)
        if m:
            accuracy = float(m.group(1))
    if len(rates) != args.epochs or accuracy is None:
        raise SystemExit(f"pytorch_fashion_cpu: could not parse the output of {args.stoke}")
    return rate(rates), seconds, accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--stoke", default="build/default/examples/fashion_mnist/fashion_mnist",
                        help="the stoke example to run first ('' to skip it)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64, help="per device (process)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--limit", type=int, default=0,
                        help="train PyTorch on the first N images only (for a quick try)")
    parser.add_argument("--variants", default="dataloader,slicing,ddp")
    args = parser.parse_args()
    variants = args.variants.split(",")

    summary = {}
    if args.stoke:
        summary["stoke"] = (f"stoke, {args.devices} CPU devices x 1 thread", run_stoke(args))
    threads = 2
    torch.set_num_threads(threads)
    print(f"# pytorch {torch.__version__} on CPU; one-process variants: "
          f"torch.set_num_threads({threads}), batch {args.batch_size * args.devices}; "
          f"DDP: torch.set_num_threads(1) per process"
          + (f"; trained on the first {args.limit} images only" if args.limit else ""),
          flush=True)
    if "dataloader" in variants:
        best = None
        for workers in (0, 2):
            name = f"pytorch DataLoader, num_workers {workers}, {threads} threads"
            result = single_process(args, name, dataloader_batches(args, workers))
            summary[f"dataloader_w{workers}"] = (name, result)
            if best is None or result[0] > best[1][0]:
                best = (name, result)
        summary["dataloader"] = best
    if "slicing" in variants:
        name = f"pytorch tensor slicing, {threads} threads"
        summary["slicing"] = (name, single_process(args, name, slicing_batches(args)))
    if "ddp" in variants:
        summary["ddp"] = (f"pytorch DDP, {args.devices} processes x 1 thread", ddp(args))

    print(f"# samples/s: the mean over epochs 2..{args.epochs} of training samples over training "
          "time; run: whole wall time, reading the files and evaluating every epoch included")
    for key, (name, (samples_per_s, seconds, accuracy)) in summary.items():
        if key != "dataloader":
            print(f"{name}: {samples_per_s:.0f} samples/s, run {seconds:.1f} s, "
                  f"test accuracy {accuracy:.4f}")
    if "stoke" in summary:
        stoke_rate = summary["stoke"][1][0]
        for key in ("dataloader", "slicing", "ddp"):
            if key in summary:
                name, (samples_per_s, _, _) = summary[key]
                note = f"  # against {name}" if key == "dataloader" else ""
                print(f"ratio stoke_over_pytorch_{key}: {stoke_rate / samples_per_s:.2f}{note}")


if __name__ == "__main__":
    main()
