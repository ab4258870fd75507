#!/usr/bin/env python3
"""Builds token stores (Megatron-LM's .bin + .idx) for the sequences work of stoke (#37).

real: a real corpus. Every text file under SOURCE (by default the reStructuredText sources of
    the Python 3.11 documentation, from Debian's python3.11-doc: 497 files, 12 MB) is one
    document, tokenized with the GPT-2 byte-pair encoding that PyPI's blingfire ships
    (gpt2.bin), followed by GPT-2's end-of-text token 50256, and written as uint16 tokens.
    The files are taken in sorted order, so the store is the same on every machine.
    (--tokenizer bytes takes a text's UTF-8 bytes as its tokens: for tests without blingfire.)
synthetic: a corpus of any size (10 billion tokens when asked; the tests use a few thousand)
    whose document lengths are drawn, with replacement, from a real store's lengths, and whose
    tokens are random below the real store's largest token, from a seed; written as SHARDS
    stores of about equal size, a document at a time, so memory does not grow with the corpus
    beyond the writer's index (12 bytes a document).

    --sparse writes the lengths only: every token is 0 and each .bin file is sparse (a hole
    of the right size, no disk), for measurements where the corpus's size, not its tokens, is
    the point (scripts/sequence-bench's 10-billion-token corpus: a 24 MB index, no 40 GB).
    --dtype int32 writes 32-bit tokens (what stoke's packed batches hold) instead of uint16.

    make_corpus.py real OUT_PREFIX [--source DIR] [--tokenizer gpt2|bytes] [--dtype T]
    make_corpus.py synthetic OUT_DIR --lengths-from PREFIX --tokens N [--shards K] [--seed S]
                   [--dtype T] [--sparse]

scripts/make-corpus sets up what this needs (python3.11-doc, a venv with numpy and blingfire).
The stores are written with stoke_loader's numpy writer (token_store_writer.py, through
scripts/token_store.py).
"""
import argparse
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from token_store import CODES, TokenStoreWriter, write_texts  # noqa: E402

PYTHON_DOCS = "/usr/share/doc/python3.11/html/_sources"
END_OF_TEXT = 50256  # GPT-2's <|endoftext|>


def gpt2_tokenizer():
    """GPT-2's byte-pair encoding, from the model file inside blingfire's wheel."""
    import blingfire

    model = blingfire.load_model(os.path.join(os.path.dirname(blingfire.__file__), "gpt2.bin"))

    def tokenize(text):
        # text_to_ids needs a bound on the ids; a GPT-2 token covers at least one byte.
        bound = len(text.encode("utf-8")) + 8
        return blingfire.text_to_ids(model, text, bound, END_OF_TEXT, True)

    return tokenize


def utf8_bytes(text):
    """A text's UTF-8 bytes as its tokens."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def write_real(prefix, source, tokenize, dtype=np.uint16):
    """Writes every text file under `source`, tokenized by `tokenize`, as a document of
    `prefix`, each followed by END_OF_TEXT; returns the documents and tokens written."""
    files = sorted(p for p in pathlib.Path(source).rglob("*") if p.is_file()
                   and p.suffix == ".txt")
    if not files:
        raise SystemExit(f"make_corpus: no .txt file under {source} (install python3.11-doc)")
    texts = (path.read_text(encoding="utf-8", errors="replace") for path in files)
    return write_texts(prefix, texts, tokenize, dtype, end_of_document=END_OF_TEXT)


def read_lengths(prefix):
    """The sequence lengths of the store `prefix` and its largest token (numpy, in place)."""
    index = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
    dtype = {code: t for t, code in CODES.items()}[int(index[17])]
    sequences = int(index[18:26].view(np.uint64)[0])
    lengths = np.frombuffer(index, np.int32, sequences, 34)
    data = np.memmap(prefix + ".bin", mode="r", dtype=dtype)
    return lengths[lengths > 0], int(data.max())


def write_synthetic(out_dir, lengths_from, tokens, shards=1, seed=0, dtype=np.uint16,
                    sparse=False):
    """Writes about `tokens` tokens as `shards` stores in `out_dir` (all zero in sparse files
    with `sparse`); returns the documents."""
    lengths, largest = read_lengths(lengths_from)
    random = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    per_shard = -(-tokens // shards)
    documents = 0
    for shard in range(shards):
        writer = TokenStoreWriter(os.path.join(out_dir, f"synthetic_{shard:05d}"), dtype)
        left = min(per_shard, tokens - shard * per_shard)
        while left > 0:
            for length in random.choice(lengths, size=1024):
                length = min(int(length), left)
                if sparse:
                    writer.add_zero_document(length)
                else:
                    writer.add_document(random.integers(0, largest + 1, length, dtype=dtype))
                documents += 1
                left -= length
                if left == 0:
                    break
        writer.finish()
    return documents


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    real = commands.add_parser("real", help="a real corpus: Python's documentation, GPT-2 BPE")
    real.add_argument("prefix")
    real.add_argument("--source", default=PYTHON_DOCS)
    real.add_argument("--tokenizer", choices=["gpt2", "bytes"], default="gpt2")
    real.add_argument("--dtype", choices=["uint16", "int32"], default="uint16")
    synthetic = commands.add_parser("synthetic", help="any number of tokens, real lengths")
    synthetic.add_argument("out_dir")
    synthetic.add_argument("--lengths-from", required=True, help="prefix of a real store")
    synthetic.add_argument("--tokens", type=int, required=True)
    synthetic.add_argument("--shards", type=int, default=1)
    synthetic.add_argument("--seed", type=int, default=0)
    synthetic.add_argument("--dtype", choices=["uint16", "int32"], default="uint16")
    synthetic.add_argument("--sparse", action="store_true", help="zero tokens, sparse .bin")
    args = parser.parse_args()
    if args.command == "real":
        tokenize = gpt2_tokenizer() if args.tokenizer == "gpt2" else utf8_bytes
        documents, tokens = write_real(args.prefix, args.source, tokenize, np.dtype(args.dtype))
        print(f"make_corpus: {args.prefix}: {documents} documents, {tokens} tokens")
    else:
        documents = write_synthetic(args.out_dir, args.lengths_from, args.tokens, args.shards,
                                    args.seed, np.dtype(args.dtype), args.sparse)
        print(f"make_corpus: {args.out_dir}: {args.shards} stores, {documents} documents, "
              f"{args.tokens} tokens")


if __name__ == "__main__":
    main()
