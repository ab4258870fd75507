"""Trains a softmax classifier on Fashion-MNIST in NumPy, fed by stoke_loader.

    python examples/python/fashion_mnist_numpy.py [--epochs 3] [--workers 2]

Reads the Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist) or the
directory given with --data. Shows the loader (shuffled, a new order each epoch), zero-copy
batches (numpy.from_dlpack), padding left out of evaluation, and exact resume from
state_dict() in the middle of an epoch.
"""

import argparse
import gzip
import os
import pathlib
import time

# The loader's workers take cores; OpenBLAS threads that spin beside them for small matrix
# products slow the step down (40x on a busy 2-core machine). Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import stoke_loader as sl  # noqa: E402


def read_idx(path: pathlib.Path, header: int) -> np.ndarray:
    with gzip.open(path, "rb") as file:
        return np.frombuffer(file.read(), dtype=np.uint8, offset=header)


def load(directory: pathlib.Path, split: str):
    images = read_idx(directory / f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 28 * 28)
    labels = read_idx(directory / f"{split}-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return images, labels


def softmax_step(w, b, x, y, lr):
    logits = x @ w + b
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-12).mean()
    p[np.arange(len(y)), y] -= 1.0
    p /= len(y)
    w -= lr * (x.T @ p)
    b -= lr * p.sum(axis=0)
    return loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path,
                        default=pathlib.Path("/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    train = sl.Loader({"image": train_x, "label": train_y}, batch_size=128, shuffle=True,
                      seed=42, num_workers=args.workers, remainder="drop")
    # Evaluation pads the last batch (a fixed batch shape) and leaves the padding out.
    test = sl.Loader({"image": test_x, "label": test_y}, batch_size=1000, remainder="pad",
                     num_workers=args.workers)

    w = np.zeros((28 * 28, 10), dtype=np.float32)
    b = np.zeros(10, dtype=np.float32)
    checkpoint = None
    for epoch in range(args.epochs):
        start, losses = time.perf_counter(), []
        for batch in train:  # each pass is the next epoch, in a new order
            x = np.from_dlpack(batch["image"]).astype(np.float32) / 255.0
            y = np.from_dlpack(batch["label"])
            losses.append(softmax_step(w, b, x, y, lr=0.5))
            if epoch == 0 and batch.step == 100:
                checkpoint = (train.state_dict(), w.copy(), b.copy())
        correct = seen = 0
        for batch in test:
            x = np.from_dlpack(batch["image"]).astype(np.float32) / 255.0
            y = np.from_dlpack(batch["label"])
            hit = (np.argmax(x @ w + b, axis=1) == y) & batch.mask  # padding never counts
            correct += int(hit.sum())
            seen += batch.real_size
        print(f"epoch {batch.epoch}: loss {np.mean(losses):.4f}, test accuracy "
              f"{correct / seen:.4f} over {seen} images, {time.perf_counter() - start:.2f} s")

    # Resume the first epoch from its checkpoint at step 100: the same batches follow.
    state, w0, b0 = checkpoint
    again = sl.Loader({"image": train_x, "label": train_y}, batch_size=128, shuffle=True,
                      seed=42, num_workers=args.workers, remainder="drop")
    again.load_state_dict(state)
    first = next(iter(again))
    uninterrupted = train.order(0)[first.step * 128:(first.step + 1) * 128]
    print(f"resumed epoch {first.epoch} after {state['consumed']} samples at step {first.step}: "
          f"the same batch as without the interruption: {np.array_equal(first.indices, uninterrupted)}")


if __name__ == "__main__":
    main()
