"""The PyTorch peer of examples/multi_gpu on one GPU: the same softmax classifier (784 -> 10,
weights N(0, 0.01), zero bias), the same normalisation ((b / 255 - 0.2860) / 0.3530), SGD with
the same learning rate and momentum (0.9) on the mean loss, batches of 128, shuffled, last
partial batch dropped.

Three idioms an expert would pick, all timed per epoch (training only, synchronised at the end
of each epoch):
  graph:      as resident, with the whole step (gather, normalise, forward, backward, SGD and
              the step counter) captured once as a CUDA graph and replayed: the epoch's
              permutation and the step counter live on the GPU, one replay a step;
  resident:   the whole uint8 training set on the GPU, a torch.randperm per epoch, each batch
              gathered and normalised on the GPU (the fastest way for a dataset this small);
  dataloader: torch.utils.data.DataLoader over the uint8 tensors, num_workers=2,
              pin_memory=True, persistent workers, batches copied with non_blocking=True.
Prints `pytorch_<idiom>: epoch E: S samples/s, test accuracy A` lines and, last,
`pytorch_best_samples_per_s: S` (the faster idiom's median epoch).
"""
import argparse
import statistics
import time

import numpy as np
import torch

from fashion_idx import find, read_idx


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.manual_seed(7)
    x_train = torch.from_numpy(read_idx(find(args.data, "train-images-idx3-ubyte")).reshape(-1, 784).copy())
    y_train = torch.from_numpy(read_idx(find(args.data, "train-labels-idx1-ubyte")).astype(np.int64))
    x_test = torch.from_numpy(read_idx(find(args.data, "t10k-images-idx3-ubyte")).reshape(-1, 784).copy())
    y_test = torch.from_numpy(read_idx(find(args.data, "t10k-labels-idx1-ubyte")).astype(np.int64))
    mean, std = 0.2860, 0.3530

    def normalise(bytes_):
        return (bytes_.float() / 255.0 - mean) / std

    def evaluate(model):
        with torch.no_grad():
            logits = model(normalise(x_test.to(device)))
            return (logits.argmax(1) == y_test.to(device)).float().mean().item()

    def fresh_model():
        model = torch.nn.Linear(784, 10).to(device)
        with torch.no_grad():
            model.weight.normal_(0.0, 0.01)
            model.bias.zero_()
        return model, torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    def train_step(model, optimizer, xb, yb):
        loss = torch.nn.functional.cross_entropy(model(normalise(xb)), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    results = {}
    xg, yg = x_train.to(device), y_train.to(device)
    n = (len(xg) // args.batch_size) * args.batch_size
    steps = n // args.batch_size

    def timed_epochs(idiom, model, run_epoch):
        """Runs `run_epoch` args.epochs times, each timed alone (synchronised before and after),
        printing its rate and the test accuracy; keeps the median rate in results[idiom]."""
        rates = []
        for epoch in range(args.epochs):
            torch.cuda.synchronize()
            start = time.perf_counter()
            run_epoch()
            torch.cuda.synchronize()
            rates.append(n / (time.perf_counter() - start))
            print(f"pytorch_{idiom}: epoch {epoch + 1}: {rates[-1]:.0f} samples/s, "
                  f"test accuracy {evaluate(model):.4f}", flush=True)
        results[idiom] = statistics.median(rates)

    # Graph: the resident idiom with the whole step captured as one CUDA graph (PyTorch's
    # whole-network capture recipe: warm-up on a side stream, then capture, then replay).
    model, optimizer = fresh_model()
    order = torch.randperm(len(xg), device=device)          # refilled in place per epoch
    step = torch.zeros((), dtype=torch.int64, device=device)  # the step counter, on the GPU
    offsets = torch.arange(args.batch_size, device=device)

    def graph_step():
        idx = order[step * args.batch_size + offsets]
        loss = torch.nn.functional.cross_entropy(model(normalise(xg[idx])), yg[idx])
        loss.backward()
        optimizer.step()
        step.add_(1)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up (allocations, autograd state), on real batches
            optimizer.zero_grad(set_to_none=True)
            graph_step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)  # the captured backward writes fresh gradients
    with torch.cuda.graph(graph):
        graph_step()

    def graph_epoch():
        order.copy_(torch.randperm(len(xg), device=device))
        step.zero_()
        for _ in range(steps):
            graph.replay()

    timed_epochs("graph", model, graph_epoch)

    # Resident: the dataset lives on the GPU.
    model, optimizer = fresh_model()

    def resident_epoch():
        permutation = torch.randperm(len(xg), device=device)
        for k in range(0, n, args.batch_size):
            idx = permutation[k:k + args.batch_size]
            train_step(model, optimizer, xg[idx], yg[idx])

    timed_epochs("resident", model, resident_epoch)

    # DataLoader: host tensors, worker processes, pinned memory.
    model, optimizer = fresh_model()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x_train, y_train), batch_size=args.batch_size,
        shuffle=True, drop_last=True, num_workers=2, pin_memory=True, persistent_workers=True)

    def dataloader_epoch():
        for xb, yb in loader:
            train_step(model, optimizer, xb.to(device, non_blocking=True),
                       yb.to(device, non_blocking=True))

    timed_epochs("dataloader", model, dataloader_epoch)
    best = max(results, key=results.get)
    print(f"pytorch_best_idiom: {best}")
    print(f"pytorch_best_samples_per_s: {results[best]:.0f}")


if __name__ == "__main__":
    main()
