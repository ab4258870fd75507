"""Sequences in stoke_loader (#37): token stores read in place and batched padded, packed
(concatenate-then-split, shifted, first-fit, best-fit) or bucketed by stoke's own loader.

The corpora's tokens name themselves: token t of document d is d * 1000 + t (+ 1 where a test
keeps 0 for padding), so every column of every batch can be checked against the documents."""

import json

import numpy as np
import pytest

import stoke_loader as sl

WAYS = {
    "pad": lambda store, **kw: sl.padded(store, 3, multiple=4, **kw),
    "concat": lambda store, **kw: sl.packed(store, 16, 3, window=2, **kw),
    "concat_shifted": lambda store, **kw: sl.packed(store, 16, 3, shifted=True, window=2, **kw),
    "first_fit": lambda store, **kw: sl.packed(store, 40, 2, method="first_fit", window=9, **kw),
    "best_fit": lambda store, **kw: sl.packed(store, 40, 2, method="best_fit", window=9, **kw),
    "bucket": lambda store, **kw: sl.bucketed(store, 96, buckets=3, window=11, **kw),
}


def write_store(prefix, lengths, dtype=np.int32, first=0):
    """A store of documents of `lengths`, token t of document d being d * 1000 + t + first."""
    writer = sl.TokenStoreWriter(prefix, dtype)
    for d, length in enumerate(lengths):
        writer.add_document(d * 1000 + np.arange(length) + first)
    writer.finish()
    return str(prefix)


@pytest.fixture
def lengths():
    return np.random.default_rng(37).integers(1, 40, 41).tolist()


@pytest.fixture
def store(tmp_path, lengths):
    return write_store(tmp_path / "corpus", lengths)


def columns(batch):
    return {name: np.from_dlpack(batch[name]) for name in batch.keys()}


def input_slots(loader_kind, c):
    """The slots whose tokens are inputs: all but a shifted row's last (the next row's first)."""
    width = c["tokens"].shape[1]
    return width - 1 if loader_kind == "concat_shifted" else width


def check_batch(kind, c):
    """Segments, positions, masks and cu_seqlens agree with the tokens; returns the (document,
    token) of every input slot."""
    tokens, segments, positions = c["tokens"], c["segment_ids"], c["positions"]
    mask, loss_mask = c["mask"], c["loss_mask"]
    assert tokens.dtype == np.int32 and mask.dtype == np.bool_ and c["documents"].dtype == np.int64
    assert np.array_equal(mask, segments != 0)
    seen, runs, segment_index = [], [], 0
    for r in range(tokens.shape[0]):
        row_segments = segments[r]
        s = 0
        while s < len(row_segments):
            e = s
            while e < len(row_segments) and row_segments[e] == row_segments[s]:
                e += 1
            runs.append(e - s)
            if row_segments[s] != 0:
                document = c["documents"][segment_index]
                segment_index += 1
                piece = tokens[r, s:e]
                assert np.array_equal(piece // 1000, np.full(e - s, document))
                assert np.array_equal(np.diff(piece), np.ones(e - s - 1))  # consecutive tokens
                assert np.array_equal(positions[r, s:e], np.arange(e - s))
                assert np.array_equal(loss_mask[r, s:e], np.arange(e - s) < e - s - 1)
            else:
                assert not loss_mask[r, s:e].any() and not positions[r, s:e].any()
            s = e
        # segments number 1, 2, ... in a row, padding (0) only after them
        real = row_segments[row_segments != 0]
        assert np.array_equal(np.unique(real), np.arange(1, len(np.unique(real)) + 1))
        assert (np.diff(real) >= 0).all() and (row_segments[:len(real)] != 0).all()
        for t in range(input_slots(kind, c)):
            if mask[r, t]:
                seen.append((int(tokens[r, t]) // 1000, int(tokens[r, t]) % 1000))
    assert segment_index == len(c["documents"])
    assert np.array_equal(c["cu_seqlens"], np.concatenate([[0], np.cumsum(runs)]))
    return seen


def every_token(lengths):
    return sorted((d, t) for d, n in enumerate(lengths) for t in range(n))


@pytest.mark.parametrize("kind", WAYS)
def test_every_token_of_every_document_once_per_epoch(store, lengths, kind):
    loader = WAYS[kind](store, seed=5, num_workers=2)
    for epoch in range(2):
        seen = []
        for batch in loader:
            assert batch.epoch == epoch and batch.padding == 0
            seen += check_batch(kind, columns(batch))
        assert sorted(seen) == every_token(lengths), kind


def test_a_real_token_equal_to_the_pad_id_is_never_masked(tmp_path):
    prefix = write_store(tmp_path / "zeros", [5, 3, 7, 2], first=0)  # document 0 starts with 0
    loader = sl.padded(prefix, 4, pad_id=0, shuffle=False)
    (batch,) = list(loader)
    c = columns(batch)
    assert c["tokens"].shape == (4, 7)
    assert c["tokens"][0, 0] == 0 and c["mask"][0, 0]
    assert c["mask"].sum(axis=1).tolist() == [5, 3, 7, 2]
    assert (c["tokens"][~c["mask"]] == 0).all()


def test_padded_width_is_a_multiple(store):
    for batch in sl.padded(store, 3, multiple=8):
        assert batch.width % 8 == 0 and np.from_dlpack(batch["tokens"]).shape[1] == batch.width


def test_shifted_rows_overlap_by_one_token(store):
    rows = [np.from_dlpack(b["tokens"]).copy() for b in sl.packed(store, 16, 1, shifted=True,
                                                                   shuffle=False)]
    assert rows[0].shape == (1, 17)
    for a, b in zip(rows, rows[1:]):
        if b[0, 0] != 0:
            assert a[0, 16] == b[0, 0]


def test_bucketed_batches_stay_under_the_budget(store):
    for batch in sl.bucketed(store, 96, buckets=3):
        assert batch.rows * batch.width <= 96


@pytest.mark.parametrize("kind", WAYS)
@pytest.mark.parametrize("remainder", ["pad", "drop"])
def test_shares_have_equal_batch_counts_and_cover_the_epoch(store, kind, remainder):
    whole = WAYS[kind](store, seed=3)
    plan = len(whole)
    shares = [WAYS[kind](store, seed=3, remainder=remainder).share(3, i) for i in range(3)]
    counts = {len(share) for share in shares}
    assert len(counts) == 1
    seen = []
    for share in shares:
        batches = list(share)
        assert len(batches) == len(share)
        for batch in batches:
            if batch.padding:
                assert not np.from_dlpack(batch["loss_mask"]).any()
            else:
                seen.append(batch.plan_index)
    if remainder == "pad":
        assert sorted(seen) == list(range(plan))
    else:
        assert len(seen) == plan - plan % 3 and len(set(seen)) == len(seen)


def test_a_split_gives_each_device_the_same_count(store):
    devices = sl.packed(store, 16, 2).split(2)
    assert len(devices[0]) == len(devices[1])
    assert [d.device for d in devices] == ["cpu:0", "cpu:1"]


def tokens_of(batches):
    return [np.from_dlpack(b["tokens"]).copy() for b in batches]


@pytest.mark.parametrize("kind", WAYS)
def test_resume_mid_epoch_is_exact(store, kind):
    reference = WAYS[kind](store, seed=11, num_workers=2)
    expected = tokens_of(reference)
    loader = WAYS[kind](store, seed=11, num_workers=2)
    epoch = iter(loader)
    taken = [np.from_dlpack(next(epoch)["tokens"]).copy() for _ in range(3)]
    state = loader.state_dict()
    del epoch
    resumed = WAYS[kind](store, seed=11)
    resumed.load_state_dict(json.dumps(state))
    rest = tokens_of(resumed)
    assert len(taken) + len(rest) == len(expected)
    for got, want in zip(taken + rest, expected):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("kind", ["concat", "best_fit", "bucket"])
def test_elastic_resume_onto_another_number_of_shares(store, kind):
    one = WAYS[kind](store, seed=2)
    plan = len(one)  # epoch 0's batches (another epoch's plan may have another count)
    epoch = iter(one)
    first = [next(epoch).plan_index for _ in range(2)]
    state = one.state_dict()
    del epoch
    seen = []
    for i in range(2):
        share = WAYS[kind](store, seed=2).share(2, i)
        share.load_state_dict(state)
        seen += [b.plan_index for b in share if not b.padding]
    assert sorted(first + seen) == list(range(plan))


def test_a_state_of_another_plan_is_refused(store):
    loader = sl.packed(store, 16, 2, seed=1)
    next(iter(loader))
    state = loader.state_dict()
    with pytest.raises(sl.InputError):
        sl.packed(store, 32, 2, seed=1).load_state_dict(state)


def test_any_worker_count_gives_the_same_bits(store):
    for kind in WAYS:
        a = tokens_of(WAYS[kind](store, seed=9, num_workers=0))
        b = tokens_of(WAYS[kind](store, seed=9, num_workers=3))
        assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b)), kind


def test_shards_read_as_one_store(tmp_path, lengths):
    (tmp_path / "shards").mkdir()
    half = len(lengths) // 2
    write_store(tmp_path / "shards" / "part_0", lengths[:half], dtype=np.uint16)
    writer = sl.TokenStoreWriter(tmp_path / "shards" / "part_1", np.uint16)
    for d, length in enumerate(lengths[half:], start=half):
        writer.add_document(d * 1000 + np.arange(length))
    writer.finish()
    store = sl.token_store(tmp_path / "shards")
    assert len(store) == len(lengths) and store.dtype == "uint16"
    assert store.lengths().tolist() == lengths
    assert store.token_count == sum(lengths)
    seen = []
    for batch in sl.packed(store, 16, 3):
        seen += check_batch("concat", columns(batch))
    assert sorted(seen) == every_token(lengths)


def test_write_texts_takes_any_tokenizer(tmp_path):
    texts = ["a first document", "", "the third"]
    documents, tokens = sl.write_texts(tmp_path / "texts", texts,
                                       lambda text: [ord(ch) for ch in text], np.uint16,
                                       end_of_document=3)
    assert (documents, tokens) == (3, sum(len(t) + 1 for t in texts))
    store = sl.token_store(tmp_path / "texts")
    assert store[0].tolist() == [ord(ch) for ch in texts[0]] + [3]
    assert store[1].tolist() == [3]


def test_a_corrupt_index_is_refused_naming_the_file_and_offset(store):
    with open(store + ".idx", "r+b") as f:
        f.seek(34)  # the first sequence's length, after the 34-byte header
        f.write(np.int32(1 << 30).tobytes())
    with pytest.raises(sl.InputError) as error:
        sl.token_store(store)
    message = str(error.value)
    assert store + ".idx" in message and "offset" in message


def test_a_missing_store_is_named(tmp_path):
    with pytest.raises(sl.InputError, match="nowhere.bin"):
        sl.token_store(tmp_path / "nowhere")


def test_columns_are_dlpack_views_of_the_batch(store):
    batch = next(iter(sl.packed(store, 16, 2)))
    tokens = batch["tokens"]
    view = np.from_dlpack(tokens)
    assert view.ctypes.data == tokens.address and view.shape == (2, 16)
    assert np.asarray(tokens).ctypes.data == tokens.address
    torch = pytest.importorskip("torch", reason="torch is not importable here")
    tensor = torch.from_dlpack(batch["segment_ids"])
    assert tensor.data_ptr() == batch["segment_ids"].address
    assert torch.from_dlpack(batch["loss_mask"]).dtype == torch.bool


def test_an_unknown_column_or_remainder_is_refused(store):
    batch = next(iter(sl.packed(store, 16, 2)))
    with pytest.raises(KeyError):
        batch["labels"]
    with pytest.raises(sl.UsageError, match="partial"):
        sl.packed(store, 16, 2, remainder="partial")
    with pytest.raises(ValueError, match="method"):
        sl.packed(store, 16, 2, method="greedy")


def test_the_books_python_example(tmp_path):
    texts = ["stoke packs documents", "into rows", "of sixteen tokens, with their segments"]
    prefix = str(tmp_path / "corpus")
    # --8<-- [start:python]
    import numpy as np
    import stoke_loader as sl

    # A token store from any tokenizer (a callable from text to ids), then packed rows of
    # S + 1 = 17 tokens (shifted targets), 2 rows a batch, shared by 2 ranks.
    sl.write_texts(prefix, texts, lambda text: [ord(ch) for ch in text], np.uint16,
                   end_of_document=0)
    loader = sl.packed(sl.token_store(prefix), 16, 2, shifted=True, seed=7, num_workers=2)
    ranks = [loader.share(2, rank) for rank in range(2)]  # equal batch counts
    for batch in ranks[0]:
        tokens = np.from_dlpack(batch["tokens"])          # int32 [2, 17], no copy
        inputs, targets = tokens[:, :16], tokens[:, 1:]
        segments = np.from_dlpack(batch["segment_ids"])   # 1, 2, ... per row; 0 padding
        positions = np.from_dlpack(batch["positions"])    # restart at each document
        weights = np.from_dlpack(batch["loss_mask"])[:, :16]  # no loss across documents
        state = ranks[0].state_dict()                     # exact and elastic resume
    # --8<-- [end:python]
        assert inputs.shape == targets.shape == (2, 16) and segments.shape == (2, 17)
        assert weights.dtype == np.bool_ and positions.dtype == np.int32
    assert len(ranks[0]) == len(ranks[1]) >= 1
    # taken in the epoch's last step: the epoch is done, the next begins at its start
    assert (state["epoch"], state["consumed"]) == (1, 0)
    assert sum(len(t) + 1 for t in texts) <= 17 * 2 * 2 * len(ranks[0])


def test_tokens_wider_than_32_bits_are_refused_naming_the_store(tmp_path):
    prefix = write_store(tmp_path / "wide", [3, 4], dtype=np.int64)
    with pytest.raises(sl.InputError, match="wide.idx.*int64"):
        sl.token_store(prefix)


def test_a_shard_of_another_token_type_is_refused_naming_it(tmp_path):
    first = write_store(tmp_path / "a", [3, 4], dtype=np.uint16)
    second = write_store(tmp_path / "b", [5], dtype=np.int32)
    with pytest.raises(sl.InputError, match="b.idx"):
        sl.token_store([first, second])


def test_attention_cost_counts_width_squared(store):
    for batch in sl.bucketed(store, 4000, cost="attention", buckets=2):
        assert batch.rows * batch.width * batch.width <= 4000
