#!/usr/bin/env python3
"""Compares stoke's sequence figures with the peers': reads what bench/sequence_bench and
bench/sequences/peers.py printed and prints one `target ...: met|missed (...)` line for each
target of issue #37 that needs both, with the figures it compared.

    summary.py STOKE_OUTPUT PEERS_OUTPUT

- first batch on the largest store, >= 100x sooner than the best peer there (the peers' times
  with their index builds; Megatron's time with its cache built is shown beside it);
- real tokens/s on the real corpus, >= 3x the best peer's;
- padding of each way, no worse than the best peer's of the same kind (whole-document packing:
  Grain's first-fit; buckets: tf.data; concatenation: Megatron, Grain, litdata and torchtune,
  whose split_across_pack=True cuts documents across rows).
A file without the lines a target needs is an error naming the file and what is missing.
"""
from __future__ import annotations

import re
import sys

NUMBER = r"([0-9][0-9,]*\.?[0-9]*)"
WAY = re.compile(rf"^way ([a-z-]+): first batch {NUMBER} ms .*?, {NUMBER} M tokens/s, ratio .*"
                 rf"padding {NUMBER}$")
MEMORY = re.compile(rf"^memory ([a-z-]+), ([0-9]+) tokens: .*?first batch {NUMBER} ms")
PEER = re.compile(rf"^peer (\S+) (.+?): first batch {NUMBER} ms \(([^)]*)\), {NUMBER} M tokens/s, "
                  rf"padding (-?{NUMBER})$")
KINDS = {"first-fit": ("grain-first-fit",), "best-fit": ("grain-first-fit",),
         "bucket": ("tf.data",), "concat": ("megatron", "grain-concat", "litdata", "torchtune")}


def number(text: str) -> float:
    return float(text.replace(",", ""))


def read(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    stoke_path, peers_path = sys.argv[1:]
    ways = {}
    largest: dict[str, float] = {}
    largest_tokens = 0
    for line in read(stoke_path):
        if m := WAY.match(line):
            ways[m[1]] = (number(m[2]), number(m[3]), number(m[4]))
        elif m := MEMORY.match(line):
            tokens = int(m[2])
            if tokens > largest_tokens:
                largest_tokens, largest = tokens, {}
            if tokens == largest_tokens:
                largest[m[1]] = number(m[3])
    if not ways:
        sys.exit(f"summary: {stoke_path} has no 'way ...' line of sequence_bench")
    peers = []  # (name, corpus, first ms, how, tokens/s in M, padding)
    for line in read(peers_path):
        if m := PEER.match(line):
            peers.append((m[1], m[2], number(m[3]), m[4], number(m[5]), number(m[6])))
    if not peers:
        sys.exit(f"summary: {peers_path} has no 'peer ...: first batch' line of peers.py")

    big = [p for p in peers if p[1].startswith("10B") and "cache built" not in p[3]]
    if largest and big:
        best = min(big, key=lambda p: p[2])
        slowest = max(largest.items(), key=lambda w: w[1])
        ratio = best[2] / slowest[1]
        print(f"target first batch on {largest_tokens} tokens >= 100x sooner than the best peer: "
              f"{'met' if ratio >= 100 else 'missed'} (stoke's slowest way {slowest[0]} "
              f"{slowest[1]:.3f} ms, the best peer {best[0]} {best[2]:.1f} ms: {ratio:.1f}x)")
    else:
        print("target first batch on the largest store >= 100x sooner than the best peer: not "
              "measured (no peer ran on it, or no larger store was given)")
    real = [p for p in peers if p[1].startswith("real")]
    if real:
        best = max(real, key=lambda p: p[4])
        slowest = min(ways.items(), key=lambda w: w[1][1])
        ratio = slowest[1][1] / best[4] if best[4] > 0 else float("inf")
        print(f"target tokens/s >= 3x the best peer: {'met' if ratio >= 3 else 'missed'} "
              f"(stoke's slowest way {slowest[0]} {slowest[1][1]:.1f} M tokens/s, the best peer "
              f"{best[0]} {best[4]:.1f} M tokens/s: {ratio:.1f}x)")
    for way, kinds in KINDS.items():
        same = [p for p in real if p[0] in kinds]
        if way not in ways or not same:
            continue
        best = min(same, key=lambda p: p[5])
        padding = ways[way][2]
        print(f"target padding of {way} no worse than the best peer's: "
              f"{'met' if padding <= best[5] + 1e-4 else 'missed'} (stoke {padding:.4f}, "
              f"{best[0]} {best[5]:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
