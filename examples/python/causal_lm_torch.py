"""Trains a small causal language model in PyTorch on packed sequences of a real corpus, fed by
stoke_loader (#37): the point is the data.

    scripts/make-corpus                  # build/corpus/pydocs: Python's docs, GPT-2 BPE
    python examples/python/causal_lm_torch.py [--corpus build/corpus/pydocs] [--steps 200]

The corpus's documents are packed by concatenate-then-split into rows of S + 1 tokens
(``sl.packed(..., shifted=True)``): the inputs are a row's first S tokens, the targets its last
S. Each batch brings what the model needs, through torch.from_dlpack without a copy:

- ``segment_ids``: attention stays inside each document of a row (a block-diagonal causal mask),
  so packing never lets one document see another;
- ``positions``: position embeddings restart at each document;
- ``loss_mask``: no loss on the first token of the next document after a document's end, nor on
  padding.

The model: token and position embeddings, ``--layers`` pre-norm transformer blocks of width
``--width``, the output layer tied to the token embedding; AdamW. Prints the loss every
``--every`` steps, then "first N steps: loss A; last N steps: loss B" (the mean loss per real
target token over the first and the last ``--every`` steps).
"""

import argparse
import math
import pathlib

import torch
import torch.nn.functional as F

import stoke_loader as sl

ROOT = pathlib.Path(__file__).resolve().parents[2]
VOCABULARY = 50257  # GPT-2's


class Block(torch.nn.Module):
    """A pre-norm transformer block: attention under a mask, then an MLP."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        rows, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(rows, length, 3, self.heads, -1).unbind(2)
        attended = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                  v.transpose(1, 2), attn_mask=mask[:, None])
        x = x + self.out(attended.transpose(1, 2).reshape(rows, length, width))
        return x + self.mlp(self.norm2(x))


class CausalLM(torch.nn.Module):
    """Token and position embeddings, transformer blocks, an output tied to the embedding."""

    def __init__(self, width: int, layers: int, heads: int, max_position: int):
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCABULARY, width)
        self.positions = torch.nn.Embedding(max_position, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        for embedding in (self.tokens, self.positions):  # small logits: a loss near ln V at first
            torch.nn.init.normal_(embedding.weight, std=0.02)

    def forward(self, tokens, positions, segments):
        # Attention within a document, to itself and what came before (padding sees itself).
        length = tokens.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        same = segments[:, :, None] == segments[:, None, :]
        mask = (same & causal) | torch.eye(length, dtype=torch.bool)
        x = self.tokens(tokens) + self.positions(positions)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) @ self.tokens.weight.T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(ROOT / "build/corpus/pydocs"),
                        help="token store prefix (scripts/make-corpus makes the default)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--every", type=int, default=20, help="steps per printed loss")
    parser.add_argument("--threads", type=int, default=2, help="torch's CPU threads")
    parser.add_argument("--workers", type=int, default=1, help="stoke_loader's worker threads")
    args = parser.parse_args()
    torch.manual_seed(7)
    torch.set_num_threads(args.threads)

    store = sl.token_store(args.corpus)
    loader = sl.packed(store, args.sequence_length, args.rows, shifted=True, seed=7,
                       num_workers=args.workers)
    s = args.sequence_length
    model = CausalLM(args.width, args.layers, args.heads, max_position=s + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    print(f"corpus: {len(store)} documents, {store.token_count} tokens; "
          f"{len(loader)} batches of {args.rows} x {s + 1} per epoch")

    losses = []  # (summed loss, target tokens) of each step
    step = 0
    while step < args.steps:
        for batch in loader:
            tokens = torch.from_dlpack(batch["tokens"]).long()
            positions = torch.from_dlpack(batch["positions"]).long()
            segments = torch.from_dlpack(batch["segment_ids"])
            weights = torch.from_dlpack(batch["loss_mask"])[:, :s].float()
            logits = model(tokens[:, :s], positions[:, :s], segments[:, :s])
            per_token = F.cross_entropy(logits.reshape(-1, VOCABULARY), tokens[:, 1:].reshape(-1),
                                        reduction="none")
            total = (per_token * weights.reshape(-1)).sum()
            count = weights.sum()
            loss = total / count.clamp(min=1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append((total.item(), count.item()))
            step += 1
            if step % args.every == 0:
                print(f"step {step}/{args.steps}: loss {loss.item():.3f}")
            if step == args.steps:
                break

    def mean(part):
        return sum(t for t, _ in part) / max(sum(c for _, c in part), 1)

    n = min(args.every, len(losses))
    first, last = mean(losses[:n]), mean(losses[-n:])
    print(f"first {n} steps: loss {first:.3f}; last {n} steps: loss {last:.3f} "
          f"(uniform over the vocabulary: {math.log(VOCABULARY):.3f})")


if __name__ == "__main__":
    main()
