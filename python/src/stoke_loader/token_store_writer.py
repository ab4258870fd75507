"""Writes token stores in Megatron-LM's indexed dataset format (<prefix>.bin + <prefix>.idx),
with numpy alone: what stoke_loader.token_store reads, from any tokenizer.

    writer = TokenStoreWriter("corpus", numpy.uint16)
    writer.add_document(tokens)           # or add_sequence(...) several times, end_document()
    writer.finish()                       # puts .bin, then .idx, in place by atomic renames

    # or, from texts and any tokenizer (a callable from a string to ids):
    write_texts("corpus", texts, tokenizer.encode, numpy.uint16, end_of_document=eos_id)

Tokens stream to a temporary .bin file; the lengths and document index stay in memory until
finish() (12 bytes a sequence). This file imports nothing of stoke_loader (numpy only), so the
repository's scripts (scripts/token_store.py, scripts/make_corpus.py) load it by its path
without the native module.
"""
import array
import os
import struct

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
CODES = {np.dtype(t): code for code, t in
         {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
          7: np.float32, 8: np.uint16}.items()}


def _commit(temporary, path):
    """fsyncs `temporary` and renames it over `path`, then fsyncs the directory."""
    with open(temporary, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(temporary, path)
    directory = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class TokenStoreWriter:
    """Writes <prefix>.bin and <prefix>.idx; see the module's comment."""

    def __init__(self, prefix, dtype=np.uint16):
        self.dtype = np.dtype(dtype)
        if self.dtype not in CODES:
            raise ValueError(f"Megatron's format has no code for {self.dtype}")
        self.prefix = os.fspath(prefix)
        self._temporary = f"{self.prefix}.bin.tmp.{os.getpid()}"
        self._bin = open(self._temporary, "wb")
        self.lengths = array.array("i")  # int32: 4 bytes a sequence, not a Python int each
        self.document_index = array.array("q", [0])

    def add_sequence(self, tokens):
        """Appends a sequence of tokens (any sequence of numbers) to the current document."""
        values = np.asarray(tokens, dtype=self.dtype)
        if values.ndim != 1 or values.size > np.iinfo(np.int32).max:
            raise ValueError(f"a sequence is one axis of at most 2**31 - 1 tokens: {values.shape}")
        self._bin.write(values.tobytes())
        self.lengths.append(values.size)

    def add_zero_document(self, length):
        """A document of `length` zero tokens, left as a hole in .bin: the file is sparse, so
        its zeros take no disk (for corpora whose size, not whose tokens, is the point)."""
        if length < 0 or length > np.iinfo(np.int32).max:
            raise ValueError(f"a sequence has 0 to 2**31 - 1 tokens: {length}")
        self._bin.seek(int(length) * self.dtype.itemsize, os.SEEK_CUR)
        self.lengths.append(int(length))
        self.end_document()

    def end_document(self):
        """Ends the current document."""
        self.document_index.append(len(self.lengths))

    def add_document(self, tokens):
        """A document of one sequence."""
        self.add_sequence(tokens)
        self.end_document()

    def finish(self):
        """Ends a document left open, writes the index, and puts both files in place."""
        if self.document_index[-1] != len(self.lengths):
            self.end_document()
        self._bin.truncate()  # a hole at the end (add_zero_document) still counts in the size
        self._bin.close()
        lengths = np.frombuffer(self.lengths, dtype=np.int32)
        pointers = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1].astype(np.int64) * self.dtype.itemsize, out=pointers[1:])
        index = f"{self.prefix}.idx.tmp.{os.getpid()}"
        with open(index, "wb") as f:
            f.write(MAGIC + struct.pack("<QBQQ", 1, CODES[self.dtype], len(lengths),
                                        len(self.document_index)))
            f.write(lengths.tobytes())
            f.write(pointers.tobytes())
            f.write(self.document_index.tobytes())
        _commit(self._temporary, self.prefix + ".bin")
        _commit(index, self.prefix + ".idx")


def write_texts(prefix, texts, tokenize, dtype=np.uint16, end_of_document=None):
    """Writes each of `texts` (any iterable of strings) as a document of the store `prefix`,
    tokenized by `tokenize` (any callable from a string to token ids: a SentencePiece model's
    encode, a Hugging Face tokenizer's, ...), followed by `end_of_document` when given.
    Returns the documents and tokens written."""
    writer = TokenStoreWriter(prefix, dtype)
    documents = tokens = 0
    for text in texts:
        ids = np.asarray(tokenize(text), dtype=writer.dtype)
        if end_of_document is not None:
            ids = np.append(ids, np.asarray(end_of_document, dtype=writer.dtype))
        writer.add_document(ids)
        documents += 1
        tokens += ids.size
    writer.finish()
    return documents, tokens
