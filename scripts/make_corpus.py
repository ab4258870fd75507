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

    make_corpus.py real OUT_PREFIX [--source DIR] [--tokenizer gpt2|bytes]
    make_corpus.py synthetic OUT_DIR --lengths-from PREFIX --tokens N [--shards K] [--seed S]

scripts/make-corpus sets up what this needs (python3.11-doc, a venv with numpy and blingfire).
The stores are written with scripts/token_store.py's numpy writer: stoke_loader has no writer
of its own yet.
"""
import argparse
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from token_store import TokenStoreWriter, write_texts  # noqa: E402

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


def write_real(prefix, source, tokenize):
    """Writes every text file under `source`, tokenized by `tokenize`, as a document of
    `prefix`, each followed by END_OF_TEXT; returns the documents and tokens written."""
    files = sorted(p for p in pathlib.Path(source).rglob("*") if p.is_file()
                   and p.suffix == ".txt")
    if not files:
        raise SystemExit(f"make_corpus: no .txt file under {source} (install python3.11-doc)")
    texts = (path.read_text(encoding="utf-8", errors="replace") for path in files)
    return write_texts(prefix, texts, tokenize, np.uint16, end_of_document=END_OF_TEXT)


def read_lengths(prefix):
    """The sequence lengths of the store `prefix` and its largest token (numpy, in place)."""
    index = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
    sequences = int(index[18:26].view(np.uint64)[0])
    lengths = np.frombuffer(index, np.int32, sequences, 34)
    data = np.memmap(prefix + ".bin", mode="r", dtype=np.uint16)
    return lengths[lengths > 0], int(data.max())


def write_synthetic(out_dir, lengths_from, tokens, shards=1, seed=0):
    """Writes about `tokens` tokens as `shards` stores in `out_dir`; returns the documents."""
    lengths, largest = read_lengths(lengths_from)
    random = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    per_shard = -(-tokens // shards)
    documents = 0
    for shard in range(shards):
        writer = TokenStoreWriter(os.path.join(out_dir, f"synthetic_{shard:05d}"), np.uint16)
        left = min(per_shard, tokens - shard * per_shard)
        while left > 0:
            for length in random.choice(lengths, size=1024):
                length = min(int(length), left)
                writer.add_document(random.integers(0, largest + 1, length, dtype=np.uint16))
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
    synthetic = commands.add_parser("synthetic", help="any number of tokens, real lengths")
    synthetic.add_argument("out_dir")
    synthetic.add_argument("--lengths-from", required=True, help="prefix of a real store")
    synthetic.add_argument("--tokens", type=int, required=True)
    synthetic.add_argument("--shards", type=int, default=1)
    synthetic.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "real":
        tokenize = gpt2_tokenizer() if args.tokenizer == "gpt2" else utf8_bytes
        documents, tokens = write_real(args.prefix, args.source, tokenize)
        print(f"make_corpus: {args.prefix}: {documents} documents, {tokens} tokens")
    else:
        documents = write_synthetic(args.out_dir, args.lengths_from, args.tokens, args.shards,
                                    args.seed)
        print(f"make_corpus: {args.out_dir}: {args.shards} stores, {documents} documents, "
              f"{args.tokens} tokens")


if __name__ == "__main__":
    main()
