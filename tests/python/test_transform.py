"""A per-batch Python function: called in the consumer's thread with the GIL, its result
yielded; its cost measured."""

import threading
import time

import numpy as np
import pytest

import stoke_loader as sl


@pytest.fixture
def rows():
    return np.arange(60 * 3, dtype=np.float32).reshape(60, 3)


def test_transform_result_is_yielded(rows):
    calls = []

    def scale(batch):
        calls.append((batch.epoch, batch.step, threading.get_ident()))
        return {"x": np.from_dlpack(batch["x"]) * 2, "indices": batch.indices}

    loader = sl.Loader(rows, batch_size=8, shuffle=True, seed=2, num_workers=2, transform=scale)
    for epoch in range(2):
        seen = []
        for out in loader:
            assert isinstance(out, dict)
            np.testing.assert_array_equal(out["x"], rows[out["indices"]] * 2)
            seen.extend(out["indices"])
        assert sorted(seen) == list(range(60))
    assert [c[:2] for c in calls] == [(e, s) for e in range(2) for s in range(8)]
    assert {c[2] for c in calls} == {threading.get_ident()}  # the consumer's thread


def test_transform_is_kept_by_shares_and_parts(rows):
    loader = sl.Loader(rows, batch_size=4, remainder="pad", transform=lambda b: b.step)
    parts = loader.share(2, 0).split(2)
    assert list(parts[0]) == list(range(len(parts[0])))


def test_transform_errors_propagate_naming_the_batch(rows):
    def fail(batch):
        if batch.step == 2:
            raise ArithmeticError("boom")
        return batch

    loader = sl.Loader(rows, batch_size=8, transform=fail)
    with pytest.raises(ArithmeticError, match="boom") as raised:
        list(loader)
    notes = getattr(raised.value, "__notes__", ["epoch 0, step 2"])
    assert any("epoch 0, step 2" in note for note in notes)
    with pytest.raises(TypeError, match="callable"):
        sl.Loader(rows, transform=42)


def test_transform_cost_per_batch(rows):
    """The binding's cost of a transform: an identity function against none, per batch."""
    data = np.zeros((20000, 1), dtype=np.uint8)

    def per_batch(transform):
        loader = sl.Loader(data, batch_size=1, num_workers=0, transform=transform)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in loader:
                pass
            best = min(best, (time.perf_counter() - start) / len(loader))
        return best

    plain = per_batch(None)
    identity = per_batch(lambda batch: batch)
    cost_us = (identity - plain) * 1e6
    print(f"\ntransform cost: {cost_us:.2f} us per batch (batch alone {plain * 1e6:.2f} us)")
    assert cost_us < 5.0
