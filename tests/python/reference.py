"""A model of stoke's epoch plan written from its documentation, independent of the C++ code:
the Feistel epoch order (modules/data/include/stoke/data/order.hpp) and the batch-aligned,
interleaved shares with padding that wraps to the start of the epoch (epoch_plan.hpp)."""

from __future__ import annotations

MASK = (1 << 64) - 1
ROUNDS = 6


def mix64(x: int) -> int:
    """The SplitMix64 finaliser."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    x ^= x >> 31
    return x


class EpochOrder:
    """The dataset index at each position of one epoch: a keyed Feistel network over the
    smallest power of two holding ``size``, with cycle walking."""

    def __init__(self, size: int, seed: int | None = None, epoch: int = 0):
        self.size = size
        self.shuffled = seed is not None and size > 1
        if not self.shuffled:
            return
        self.bits = (size - 1).bit_length()
        epoch_key = mix64(seed ^ mix64((epoch + 0x5851F42D4C957F2D) & MASK))
        self.keys = [mix64((epoch_key + r * 0x9E3779B97F4A7C15) & MASK) for r in range(ROUNDS)]

    def _encrypt(self, x: int) -> int:
        low_bits = self.bits // 2
        for key in self.keys:
            high_bits = self.bits - low_bits
            low = x & ((1 << low_bits) - 1)
            high = (x >> low_bits) ^ (mix64(low ^ key) & ((1 << high_bits) - 1))
            x = (low << high_bits) | high
            low_bits = high_bits
        return x

    def __call__(self, position: int) -> int:
        if not self.shuffled:
            return position
        x = self._encrypt(position)
        while x >= self.size:
            x = self._encrypt(x)
        return x


def batches(size: int, batch_size: int, *, seed: int | None = None, epoch: int = 0,
            remainder: str = "partial", count: int | None = None, index: int = 0,
            offset: int = 0) -> list[tuple[list[int], int]]:
    """The (dataset indices, padding) of every batch one loader yields in ``epoch``: the whole
    epoch (``count`` None) or share ``index`` of ``count``; ``offset`` positions of the epoch
    were consumed before a resume."""
    order = EpochOrder(size, seed, epoch)
    length = size - offset
    b = batch_size
    out = []
    if count is None:
        steps = length // b if remainder == "drop" else -(-length // b)
        for step in range(steps):
            qs = range(step * b, (step + 1) * b if remainder != "partial" else
                       min((step + 1) * b, length))
            out.append(_rows(order, size, offset, list(qs)))
        return out
    assert remainder in ("drop", "pad")
    per_round = b * count
    rounds = length // per_round if remainder == "drop" else -(-length // per_round)
    for step in range(rounds):
        first = (step * count + index) * b
        out.append(_rows(order, size, offset, list(range(first, first + b))))
    return out


def _rows(order: EpochOrder, size: int, offset: int, qs: list[int]) -> tuple[list[int], int]:
    indices, padding = [], 0
    for q in qs:
        position = offset + q
        if position >= size:  # padding wraps to the start of the whole epoch
            padding += 1
            position %= size
        indices.append(order(position))
    return indices, padding
