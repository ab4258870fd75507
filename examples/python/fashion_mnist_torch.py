"""Trains the C++ demo's Fashion-MNIST classifier in PyTorch, fed by stoke_loader.

    python examples/python/fashion_mnist_torch.py [--epochs 10] [--workers 1] [--threads 1]

The model and training are those of examples/fashion_mnist (./scripts/demo): an MLP
784-256-128-10 with ReLU, He-initialised, Adam (lr 1e-3) with a cosine schedule after half an
epoch of warm-up, a batch of 128 (the demo's 2 devices x 64), images normalised as
(b / 255 - 0.2860) / 0.3530, seed 7. Reads the Debian package dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist) or the directory given with --data.

Each batch reaches PyTorch through torch.from_dlpack without a copy: the tensors are the
batch's buffer, which goes back to stoke's pool once the step lets go of them. The test loader
pads its last batch and the mask leaves the padding out. Prints one line per epoch, then
"test accuracy: 0.XXXX" as the C++ demo does.
"""

import argparse
import gzip
import math
import pathlib
import time

import numpy as np
import torch
import torch.nn.functional as F

import stoke_loader as sl

MEAN, STD = 0.2860, 0.3530


def read_idx(path: pathlib.Path) -> np.ndarray:
    """The array an IDX file holds (uint8), gzip or not, shaped as its header says."""
    if not path.exists():
        path = path.with_name(path.name + ".gz")
    data = (gzip.open if path.suffix == ".gz" else open)(path, "rb").read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(directory: pathlib.Path, split: str):
    """The images of `split` ("train" or "t10k") as rows of 784 bytes, and their labels."""
    images = read_idx(directory / f"{split}-images-idx3-ubyte").reshape(-1, 28 * 28)
    labels = read_idx(directory / f"{split}-labels-idx1-ubyte").astype(np.int64)
    return images, labels


# --8<-- [start:model]
def model(seed: int) -> torch.nn.Module:
    """784-256-128-10 with ReLU, He-initialised weights, zero biases (as stoke::Mlp)."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            torch.nn.init.zeros_(layer.bias)
    return net


def cosine(epochs: int, steps_per_epoch: int):
    """stoke's CosineLr as a LambdaLR factor: a linear warm-up over half an epoch, then a
    cosine from the peak down to a twentieth of it at the last step."""
    total, warmup, floor = epochs * steps_per_epoch, steps_per_epoch // 2, 1.0 / 20

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if step >= total:
            return floor
        progress = (step - warmup) / (total - warmup)
        return floor + (1.0 - floor) * (1.0 + math.cos(math.pi * progress)) / 2.0
    return factor
# --8<-- [end:model]


# --8<-- [start:batch]
def tensors(batch):
    """A stoke batch as PyTorch tensors: the images normalised to float, the labels as they
    are (torch.from_dlpack: the batch's own memory, no copy)."""
    images = torch.from_dlpack(batch["image"])  # uint8 [n, 784] over stoke's buffer
    labels = torch.from_dlpack(batch["label"])  # int64 [n]
    return (images.float() / 255.0 - MEAN) / STD, labels


def evaluate(net: torch.nn.Module, test) -> tuple[int, int]:
    """Correct predictions and images seen over `test`, leaving padded rows out."""
    net.eval()
    correct = seen = 0
    with torch.no_grad():
        for batch in test:
            x, y = tensors(batch)
            hit = (net(x).argmax(1) == y) & torch.from_numpy(batch.mask)
            correct += int(hit.sum())
            seen += batch.real_size
    return correct, seen
# --8<-- [end:batch]


def arguments(description: str, batch_size: int, world: int = 0,
              threads: int = 1) -> argparse.Namespace:
    """The command line of this example, and with `world` that of the DDP one."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=pathlib.Path,
                        default=pathlib.Path("/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=batch_size,
                        help="samples per step (over all ranks)")
    parser.add_argument("--workers", type=int, default=1, help="loader threads (per rank)")
    # PyTorch's OpenMP threads spin after every operation: more of them than the cores the
    # loader's workers leave makes each step wait on a descheduled thread (on a busy 2-core
    # machine 32 s an epoch with 2 threads, 1.8 s with 1).
    parser.add_argument("--threads", type=int, default=threads,
                        help="PyTorch's threads (per rank)")
    if world:
        parser.add_argument("--world", type=int, default=world, help="processes (ranks)")
        parser.add_argument("--checkpoint", type=pathlib.Path,
                            help="checkpoint into this directory every --checkpoint-every "
                            "steps and at every epoch's end, and resume from it")
        parser.add_argument("--checkpoint-every", type=int, default=50)
        parser.add_argument("--journal", type=pathlib.Path,
                            help="append every step's dataset indices to this file")
        parser.add_argument("--final-parameters", type=pathlib.Path,
                            help="write the trained parameters and optimizer state here")
        parser.add_argument("--train-samples", type=int, default=0,
                            help="train on the first N images (0: all)")
        parser.add_argument("--test-samples", type=int, default=0,
                            help="evaluate on the first N images (0: all)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def main():
    args = arguments(__doc__.splitlines()[0], batch_size=128)
    torch.set_num_threads(args.threads)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    # --8<-- [start:loaders]
    train = sl.Loader({"image": train_x, "label": train_y}, batch_size=args.batch_size,
                      shuffle=True, seed=args.seed, num_workers=args.workers, remainder="drop")
    test = sl.Loader({"image": test_x, "label": test_y}, batch_size=500, remainder="pad",
                     num_workers=args.workers)
    # --8<-- [end:loaders]

    net = model(args.seed)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-8)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine(args.epochs, len(train)))
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        began, losses = time.perf_counter(), []
        net.train()
        # --8<-- [start:train]
        for batch in train:  # each pass is the next epoch, in a new order
            x, y = tensors(batch)
            loss = F.cross_entropy(net(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        # --8<-- [end:train]
        seconds = time.perf_counter() - began
        correct, seen = evaluate(net, test)
        accuracy = correct / seen
        print(f"epoch {epoch}/{args.epochs}: train loss {np.mean(losses):.4f} | test accuracy "
              f"{accuracy:.4f} over {seen} images | {len(losses) * args.batch_size / seconds:.0f} "
              f"samples/s | {seconds:.1f} s", flush=True)
    print(f"test accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
