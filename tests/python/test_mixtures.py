"""Mixtures in stoke_loader (#37): a weighted blend of token stores, batched padded, packed or
bucketed by stoke's own loader; exact proportions at every prefix, every document used as the
weights say, equal counts on every share, exact and elastic resume through state_dict (which
holds each source's counts), and the refusals (a source that runs out, a restore under other
weights or schedule).

Token t of document d of source s is (s * 100 + d) * 1000 + t + 1 (0 stays padding), so every
batch names where each of its tokens came from."""

import json

import numpy as np
import pytest

import stoke_loader as sl

WAYS = {
    "pad": lambda mix, **kw: sl.padded(mix, 3, **kw),
    "concat": lambda mix, **kw: sl.packed(mix, 16, 2, window=3, **kw),
    "concat_shifted": lambda mix, **kw: sl.packed(mix, 16, 2, shifted=True, window=3, **kw),
    "first_fit": lambda mix, **kw: sl.packed(mix, 40, 2, method="first_fit", window=7, **kw),
    "bucket": lambda mix, **kw: sl.bucketed(mix, 96, buckets=3, window=7, **kw),
}


def write_source(prefix, source, lengths):
    writer = sl.TokenStoreWriter(prefix, np.int32)
    for d, length in enumerate(lengths):
        writer.add_document((source * 100 + d) * 1000 + np.arange(length) + 1)
    writer.finish()
    return str(prefix)


@pytest.fixture
def sources(tmp_path):
    rng = np.random.default_rng(7)
    sizes = (24, 12, 6)
    return [write_source(tmp_path / f"source_{s}", s, rng.integers(1, 30, size).tolist())
            for s, size in enumerate(sizes)]


def begun(loader, shifted=False):
    """(source, document) of every document begun, in order of the plan's batches."""
    out = []
    for batch in loader:
        if batch.padding:
            continue
        tokens = np.from_dlpack(batch["tokens"])
        positions = np.from_dlpack(batch["positions"])
        segments = np.from_dlpack(batch["segment_ids"])
        width = tokens.shape[1] - (1 if shifted else 0)
        for r in range(tokens.shape[0]):
            for s in range(width):
                if segments[r, s] != 0 and positions[r, s] == 0 and (tokens[r, s] - 1) % 1000 == 0:
                    code = (tokens[r, s] - 1) // 1000
                    out.append((code // 100, code % 100))
    return out


def test_every_prefix_of_a_packed_epoch_keeps_the_weights(sources):
    mix = sl.mixture([(sources[0], 3), (sources[1], 1)], exhaustion="wrap",
                     samples_per_epoch=60, seed=5)
    order = begun(sl.packed(mix, 16, 2, window=2))
    assert len(order) == 60
    counts = [0, 0]
    for n, (source, _) in enumerate(order, start=1):
        counts[source] += 1
        assert abs(counts[0] - 0.75 * n) <= 1 and abs(counts[1] - 0.25 * n) <= 1, n


def test_every_document_is_used_as_the_weights_say(sources):
    # Weights 2:1:... sized as the sources (24 and 12): an epoch of 36 picks is each once.
    mix = sl.mixture([(sources[0], 2), (sources[1], 1)], samples_per_epoch=36)
    lengths = [sl.token_store(s).lengths() for s in sources[:2]]
    for kind in ("pad", "concat", "first_fit", "bucket"):
        uses = {}
        for batch in WAYS[kind](mix, num_workers=2):
            if batch.padding:
                continue
            tokens = np.from_dlpack(batch["tokens"])[np.from_dlpack(batch["mask"])]
            for token in tokens.tolist():
                uses[token] = uses.get(token, 0) + 1
        expected = {(s * 100 + d) * 1000 + t + 1: 1 for s in range(2)
                    for d, length in enumerate(lengths[s]) for t in range(length)}
        assert uses == expected, kind


def test_tokens_by_weight_are_within_one_document_at_every_prefix(sources):
    mix = sl.mixture([(sources[0], 1), (sources[1], 1)], unit="tokens", exhaustion="wrap",
                     samples_per_epoch=50)
    stores = [sl.token_store(s) for s in sources[:2]]
    tokens = [0, 0]
    for source, document in begun(sl.packed(mix, 32, 1)):
        tokens[source] += int(stores[source].lengths()[document])
        share = (tokens[0] + tokens[1]) / 2
        assert abs(tokens[0] - share) <= 29  # within the longest document (29 tokens)


@pytest.mark.parametrize("kind", list(WAYS))
def test_shares_have_equal_counts_and_resume_exactly_and_elastically(sources, kind):
    def mix():
        return sl.mixture([(sources[0], 2), (sources[1], 1), (sources[2], 1)],
                          exhaustion="wrap", samples_per_epoch=50, seed=3,
                          schedule=[(20, [1, 1, 2])])
    shares = [WAYS[kind](mix()).share(3, i) for i in range(3)]
    assert len({len(share) for share in shares}) == 1
    whole = WAYS[kind](mix(), num_workers=2)
    plan = len(whole)
    epoch = iter(whole)
    first = [next(epoch).plan_index for _ in range(3)]
    state = whole.state_dict()
    del epoch
    account = state["plan_state"]
    assert len(account["consumed"]) == 3 and sum(account["consumed"]) > 0
    assert account["weights"] == [2, 1, 1] and account["schedule"] == [
        {"from_pick": 20, "weights": [1, 1, 2]}]
    seen = []
    for i in range(2):  # elastic: onto two shares
        share = WAYS[kind](mix()).share(2, i)
        share.load_state_dict(json.dumps(state))
        seen += [b.plan_index for b in share if not b.padding]
    assert sorted(first + seen) == list(range(plan))


def test_a_state_under_other_weights_or_schedule_is_refused_naming_it(sources):
    loader = sl.packed(sl.mixture([(sources[0], 2), (sources[1], 1)], samples_per_epoch=30), 16)
    next(iter(loader))
    state = loader.state_dict()
    other = sl.packed(sl.mixture([(sources[0], 2), (sources[1], 3)], samples_per_epoch=30), 16)
    with pytest.raises(sl.InputError, match="weight of source 1 changed"):
        other.load_state_dict(state)
    scheduled = sl.packed(sl.mixture([(sources[0], 2), (sources[1], 1)], samples_per_epoch=30,
                                     schedule=[(10, [1, 1])]), 16)
    with pytest.raises(sl.InputError, match="weight schedule changed"):
        scheduled.load_state_dict(state)
    with pytest.raises(sl.InputError, match="mixture's account"):
        sl.packed(sources[0], 16).load_state_dict(state)


def test_a_source_that_runs_out_is_a_data_error_naming_it(sources):
    mix = sl.mixture([(sources[0], 1), (sources[2], 1)], samples_per_epoch=20)
    with pytest.raises(sl.DataError, match="mixture source 1 ran out after 6 samples, at pick"):
        list(sl.packed(mix, 16))
    with pytest.raises(ValueError, match="unit"):
        sl.mixture([(sources[0], 1)], unit="bytes")
    with pytest.raises(ValueError, match="pairs"):
        sl.mixture([])
