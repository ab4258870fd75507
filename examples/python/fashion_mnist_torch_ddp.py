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

With --checkpoint DIR it checkpoints every --checkpoint-every steps and at every epoch's end
(the model, the optimizer, the schedule, every rank's random state and the loader's state, in
one file rank 0 replaces atomically: examples/python/checkpoints.py) and resumes from DIR's
checkpoint when there is one, with deterministic algorithms, so a run killed at any moment and
resumed ends with the same bits as one never killed. --journal records every step's dataset
indices for scripts/soak, which kills and resumes it; --final-parameters writes the trained
parameters and optimizer state as raw bytes.
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
from checkpoints import (StepJournal, final_parameters, load_checkpoint, save_checkpoint,
                         write_atomically)
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


def checkpoint(args, net, optimizer, schedule, train, global_step: int) -> None:
    """Saves where training stands after ``global_step`` steps (rank 0 writes; every rank takes
    part). The epoch to go on with is the loader's: after an epoch's last step its state is
    already the next epoch's start."""
    ranks = [None] * dist.get_world_size()  # every rank's (loader state, random state)
    dist.all_gather_object(ranks, (train.state_dict(), torch.get_rng_state()))
    loader_state = ranks[0][0]  # a share's state is that of all shares together
    if any(state != loader_state for state, _ in ranks):
        raise RuntimeError(f"the ranks' loader states differ: {[state for state, _ in ranks]}")
    rng_states = [rng for _, rng in ranks]
    if dist.get_rank() == 0:
        save_checkpoint(args.checkpoint, {
            "model": net.module.state_dict(), "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(), "loader": loader_state, "rng": rng_states,
            "global_step": global_step})


def run(rank: int, world: int, args, port: int) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(args.threads)
    if args.checkpoint:
        torch.use_deterministic_algorithms(True)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    if args.train_samples:
        train_x, train_y = train_x[:args.train_samples], train_y[:args.train_samples]
    if args.test_samples:
        test_x, test_y = test_x[:args.test_samples], test_y[:args.test_samples]
    per_rank = args.batch_size // world
    # --8<-- [start:share]
    # Every rank builds the same loader and takes its share: no sampler, no set_epoch.
    train = sl.Loader({"image": train_x, "label": train_y}, batch_size=per_rank, shuffle=True,
                      seed=args.seed, num_workers=args.workers,
                      remainder="drop").share(world, rank)
    test = sl.Loader({"image": test_x, "label": test_y}, batch_size=500, remainder="pad",
                     num_workers=args.workers).share(world, rank)
    # --8<-- [end:share]

    saved = load_checkpoint(args.checkpoint) if args.checkpoint else None
    module = model(args.seed)
    if saved:
        module.load_state_dict(saved["model"])
    journal = StepJournal(args.journal) if args.journal else None
    if journal and rank == 0:  # before DDP's first collective: before any rank's first step
        journal.record_run(saved["global_step"] if saved else 0)
    net = DistributedDataParallel(module)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-8)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine(args.epochs, len(train)))
    first_epoch, global_step = 1, 0
    if saved:
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        torch.set_rng_state(saved["rng"][rank])
        train.load_state_dict(saved["loader"])
        first_epoch, global_step = train.epoch + 1, saved["global_step"]  # epochs count from 1
    accuracy, once = 0.0, False
    for epoch in range(first_epoch, args.epochs + 1):
        began, losses, indices = time.perf_counter(), [], []
        net.train()
        for batch in train:  # this rank's share of the next epoch
            if journal:
                journal.record_step(batch)
            x, y = tensors(batch)
            loss = F.cross_entropy(net(x), y)  # DDP all-reduces the gradients in backward()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if epoch == 1:
                indices.append(np.asarray(batch.indices))
            global_step += 1
            if args.checkpoint and global_step % args.checkpoint_every == 0:
                checkpoint(args, net, optimizer, schedule, train, global_step)
        seconds = time.perf_counter() - began
        whole_first_epoch = epoch == 1 and len(indices) == len(train)
        if whole_first_epoch:
            once = exactly_once(np.concatenate(indices), len(train_y), len(train), per_rank)
        # --8<-- [start:evaluate]
        counts = torch.tensor(evaluate(net.module, test), dtype=torch.int64)
        dist.all_reduce(counts)  # correct and seen, summed over the ranks' shares
        accuracy = int(counts[0]) / int(counts[1])
        # --8<-- [end:evaluate]
        loss = torch.tensor([float(np.mean(losses)) if losses else 0.0])
        dist.all_reduce(loss)
        if rank == 0:
            print(f"epoch {epoch}/{args.epochs}: train loss {float(loss) / world:.4f} | test "
                  f"accuracy {accuracy:.4f} over {int(counts[1])} images | "
                  f"{len(losses) * args.batch_size / seconds:.0f} samples/s | {seconds:.1f} s",
                  flush=True)
            if whole_first_epoch:
                print(f"{world} ranks x {len(train)} steps x {per_rank} samples: every training "
                      f"sample of epoch 1 seen exactly once: {once}", flush=True)
        if args.checkpoint:
            checkpoint(args, net, optimizer, schedule, train, global_step)
    if rank == 0:
        print(f"test accuracy: {accuracy:.4f}", flush=True)
        if args.final_parameters:
            data = final_parameters(net.module, optimizer)
            write_atomically(args.final_parameters, lambda file: file.write(data))
    if journal:
        journal.close()
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
