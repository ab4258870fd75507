"""Trains the C++ demo's Fashion-MNIST classifier with DistributedDataParallel on two processes.

    python examples/python/fashion_mnist_torch_ddp.py [--epochs 10] [--world 2]

The same model, schedule and global batch of 128 as examples/python/fashion_mnist_torch.py and
the C++ demo, split over `--world` processes (torch.distributed, gloo, started here with
torch.multiprocessing) of 128 / world samples a step each. Every rank builds the same loader and
takes its share with `loader.share(world, rank)`: the shares are disjoint, cover the epoch, have
the same number of batches and are re-drawn every epoch, with no sampler and no set_epoch to
forget. DDP all-reduces the gradients; the test accuracy is summed over the ranks' shares of
the test set (padding left out). Rank 0 prints one line per epoch, whether the ranks saw every
training sample of the first epoch exactly once, then "test accuracy: 0.XXXX".
"""

import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import stoke_loader as sl
from fashion_mnist_torch import arguments, cosine, evaluate, load, model, tensors


def exactly_once(indices: np.ndarray, dataset_size: int, steps: int, batch: int) -> bool:
    """Whether the ranks' dataset indices of one epoch are all different (gathered from every
    rank; each holds the same number)."""
    mine = torch.from_numpy(indices)
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    seen = torch.cat(every)
    return (len(seen) == steps * batch * dist.get_world_size() and
            len(torch.unique(seen)) == len(seen) and int(seen.max()) < dataset_size)


def run(rank: int, world: int, args, port: int) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(args.threads)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    per_rank = args.batch_size // world
    # --8<-- [start:share]
    # Every rank builds the same loader and takes its share: no sampler, no set_epoch.
    train = sl.Loader({"image": train_x, "label": train_y}, batch_size=per_rank, shuffle=True,
                      seed=args.seed, num_workers=args.workers,
                      remainder="drop").share(world, rank)
    test = sl.Loader({"image": test_x, "label": test_y}, batch_size=500, remainder="pad",
                     num_workers=args.workers).share(world, rank)
    # --8<-- [end:share]

    net = DistributedDataParallel(model(args.seed))
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-8)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine(args.epochs, len(train)))
    accuracy, once = 0.0, False
    for epoch in range(1, args.epochs + 1):
        began, losses, indices = time.perf_counter(), [], []
        net.train()
        for batch in train:  # this rank's share of the next epoch
            x, y = tensors(batch)
            loss = F.cross_entropy(net(x), y)  # DDP all-reduces the gradients in backward()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if epoch == 1:
                indices.append(np.asarray(batch.indices))
        seconds = time.perf_counter() - began
        if epoch == 1:
            once = exactly_once(np.concatenate(indices), len(train_y), len(train), per_rank)
        # --8<-- [start:evaluate]
        counts = torch.tensor(evaluate(net.module, test), dtype=torch.int64)
        dist.all_reduce(counts)  # correct and seen, summed over the ranks' shares
        accuracy = int(counts[0]) / int(counts[1])
        # --8<-- [end:evaluate]
        loss = torch.tensor([float(np.mean(losses))])
        dist.all_reduce(loss)
        if rank == 0:
            print(f"epoch {epoch}/{args.epochs}: train loss {float(loss) / world:.4f} | test "
                  f"accuracy {accuracy:.4f} over {int(counts[1])} images | "
                  f"{len(losses) * args.batch_size / seconds:.0f} samples/s | {seconds:.1f} s",
                  flush=True)
            if epoch == 1:
                print(f"{world} ranks x {len(train)} steps x {per_rank} samples: every training "
                      f"sample of epoch 1 seen exactly once: {once}", flush=True)
    if rank == 0:
        print(f"test accuracy: {accuracy:.4f}", flush=True)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = arguments(__doc__.splitlines()[0], batch_size=128, world=2)
    if args.batch_size % args.world:
        raise SystemExit(f"--batch-size {args.batch_size} does not split over {args.world} ranks")
    mp.spawn(run, args=(args.world, args, free_port()), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
