"""stoke's semantics from Python: epochs that advance, shares exactly once with padding, exact
and elastic resume, and the same batches as the C++ loader's documented plan (reference.py)."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

import reference
import stoke_loader as sl


def rows(loader):
    return [(list(b.indices), b.padding) for b in loader]


def test_epochs_advance_on_each_iteration(table):
    x, _ = table
    loader = sl.Loader({"x": x}, batch_size=4, shuffle=True, seed=1)
    assert loader.epoch == 0
    first = rows(loader)
    assert loader.epoch == 1
    second = rows(loader)
    assert first != second  # no set_epoch needed for a new order
    loader.set_epoch(0)
    assert rows(loader) == first


def test_the_same_batches_as_the_documented_plan():
    """The C++ loader's order and split rule, modelled in Python from their documentation,
    over sizes, batch sizes, seeds, remainders, shares and epochs."""
    for size, batch_size, seed, remainder, count in itertools.product(
            [1, 2, 7, 10, 33, 100], [1, 3, 4], [None, 0, 5, 2**63 + 7],
            ["partial", "drop", "pad"], [None, 1, 2, 3]):
        if count is not None and remainder == "partial":
            continue
        loader = sl.Loader({"i": np.arange(size)}, batch_size=batch_size,
                           shuffle=seed is not None, seed=seed or 0, remainder=remainder)
        shares = [loader] if count is None else [loader.share(count, k) for k in range(count)]
        for k, share in enumerate(shares):
            for epoch in range(2):
                want = reference.batches(size, batch_size, seed=seed, epoch=epoch,
                                         remainder=remainder, count=count, index=k)
                assert rows(share) == want, (size, batch_size, seed, remainder, count, k, epoch)


def test_the_order_matches_the_model_on_a_large_dataset():
    size, seed = 1_000_003, 42
    loader = sl.Loader({"i": np.zeros(size, dtype=np.uint8)}, batch_size=1000, shuffle=True,
                       seed=seed)
    order = loader.order(3)
    model = reference.EpochOrder(size, seed, 3)
    for position in range(0, size, 9973):
        assert order[position] == model(position)
    assert np.array_equal(np.sort(order), np.arange(size))


@pytest.mark.parametrize("remainder", ["pad", "drop"])
def test_two_shares_exactly_once(table, remainder):
    x, y = table  # 23 rows, batches of 4: 2 shares pad to 24 or drop to 16
    loader = sl.Loader({"x": x, "y": y}, batch_size=4, shuffle=True, seed=7,
                       remainder=remainder, num_workers=2)
    shares = [loader.share(2, rank) for rank in range(2)]
    for epoch in range(3):
        per_share = [list(share) for share in shares]
        assert len(per_share[0]) == len(per_share[1])  # equal step counts: no hang
        real, padded = [], 0
        for batches in per_share:
            for batch in batches:
                assert batch.epoch == epoch
                real.extend(batch.indices[batch.mask])
                padded += batch.padding
                np.testing.assert_array_equal(np.from_dlpack(batch["y"]), y[batch.indices])
        assert len(real) == len(set(real))  # no sample twice
        if remainder == "pad":
            assert sorted(real) == list(range(23)) and padded == 1
        else:
            assert len(real) == 16 and padded == 0


def test_split_gives_every_device_its_share(table):
    x, _ = table
    loader = sl.Loader({"x": x}, batch_size=2, shuffle=True, seed=4, remainder="pad")
    devices = loader.split(["cpu:0", "cpu:1", "cpu:2"])
    assert [d.device for d in devices] == ["cpu:0", "cpu:1", "cpu:2"]
    steps = list(zip(*devices))  # lockstep
    assert len(steps) == len(devices[0]) == 4  # 23 rows: 4 rounds of 3 x 2
    seen = [i for step in steps for b in step for i in b.indices[b.mask]]
    assert sorted(seen) == list(range(23))
    assert [b.device for b in steps[0]] == ["cpu:0", "cpu:1", "cpu:2"]
    # A rank's share split over its devices equals one split over all devices.
    by_rank = [loader.share(2, r).split(2) for r in range(2)]
    flat = loader.split(4)
    for r, d in itertools.product(range(2), range(2)):
        assert rows(by_rank[r][d]) == rows(flat[d * 2 + r])


def test_two_processes_exactly_once(tmp_path, table):
    """Two ranks in two processes, each its share, as a torch.distributed job would run."""
    x, _ = table
    np.save(tmp_path / "x.npy", x)
    script = (
        "import json, sys, numpy as np, stoke_loader as sl\n"
        "rank, world = int(sys.argv[1]), int(sys.argv[2])\n"
        "x = np.load(sys.argv[3], mmap_mode='r')\n"
        "loader = sl.Loader({'x': x}, batch_size=3, shuffle=True, seed=8, remainder='pad')\n"
        "share = loader.share(world, rank)\n"
        "out = [[int(i) for i in b.indices[b.mask]] for _ in range(2) for b in share]\n"
        "print(json.dumps(out))\n")
    runs = [subprocess.Popen([sys.executable, "-c", script, str(r), "2", str(tmp_path / "x.npy")],
                             stdout=subprocess.PIPE, text=True) for r in range(2)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in runs]
    assert all(p.returncode == 0 for p in runs)
    assert len(outs[0]) == len(outs[1]) == 2 * 4  # 2 epochs of 4 steps each
    for epoch in range(2):
        seen = [i for out in outs for batch in out[epoch * 4:(epoch + 1) * 4] for i in batch]
        assert sorted(seen) == list(range(23))


def test_exact_resume_mid_epoch(table):
    x, y = table
    make = lambda: sl.Loader({"x": x, "y": y}, batch_size=3, shuffle=True, seed=21,
                             num_workers=2, remainder="pad")
    whole = make()
    epoch0, epoch1 = rows(whole), rows(whole)
    interrupted = make()
    for step, batch in enumerate(interrupted):
        if step == 3:
            state = interrupted.state_dict()  # counts the batch being processed
            break
    assert state["format"] == "stoke.loader_state.v3"
    assert (state["epoch"], state["consumed"], state["seed"]) == (0, 12, 21)
    saved = json.dumps(state)  # what a checkpoint would hold
    resumed = make()
    resumed.load_state_dict(json.loads(saved))
    rest = rows(resumed)
    assert rest == epoch0[4:]
    assert rows(resumed) == epoch1  # and the next epoch goes on as before
    other = make()
    other.load_state_dict(saved)  # JSON text too
    assert [(b.epoch, b.step) for b in other] == [(0, step) for step in range(4, len(epoch0))]


def test_elastic_resume_onto_another_number_of_shares(table):
    x, _ = table
    make = lambda: sl.Loader({"x": x}, batch_size=2, shuffle=True, seed=13, remainder="pad")
    two = make().split(2)
    consumed = []
    for step, pair in enumerate(zip(*two)):
        consumed.extend(i for b in pair for i in b.indices[b.mask])
        if step == 2:
            states = [d.state_dict() for d in two]
            break
    assert states[0] == states[1] and states[0]["consumed"] == 12
    three = make().split(3)
    for device in three:
        device.load_state_dict(states[0])
    lengths = {len(d) for d in three}
    assert len(lengths) == 1  # still equal step counts
    rest = [i for pair in zip(*three) for b in pair for i in b.indices[b.mask]]
    assert sorted(consumed + rest) == list(range(23))  # exactly once across the resume
    assert all(d.epoch == 1 for d in three)


def test_state_at_an_epoch_boundary(table):
    x, _ = table
    loader = sl.Loader({"x": x}, batch_size=5, shuffle=True, seed=1)
    list(loader)
    state = loader.state_dict()
    assert (state["epoch"], state["consumed"]) == (1, 0)
    other = sl.Loader({"x": x}, batch_size=5, shuffle=True, seed=1)
    other.load_state_dict(state)
    assert rows(other) == rows(loader)
