#!/usr/bin/env python3
"""A reference reader of Megatron-LM's indexed dataset (<prefix>.bin + <prefix>.idx), written
from the format alone, with numpy: prints the store as JSON (dtype, sequence lengths, document
index, every sequence's tokens) for test_token_store_python.cpp to compare with what it wrote.
Refuses what Megatron's reader asserts (magic, version); exits 77 when numpy is missing.

Usage: read_token_store.py PREFIX...
"""
import json
import os
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(77)

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
          7: np.float32, 8: np.uint16}


def read(prefix):
    with open(prefix + ".idx", "rb") as f:
        assert f.read(9) == b"MMIDIDX\x00\x00", "bad magic"
        (version,) = struct.unpack("<Q", f.read(8))
        assert version == 1, "bad version"
        (code,) = struct.unpack("<B", f.read(1))
        sequences, documents = struct.unpack("<QQ", f.read(16))
        offset = f.tell()
    index = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
    lengths = np.frombuffer(index, np.int32, sequences, offset)
    pointers = np.frombuffer(index, np.int64, sequences, offset + lengths.nbytes)
    document_index = np.frombuffer(index, np.int64, documents,
                                   offset + lengths.nbytes + pointers.nbytes)
    dtype = np.dtype(DTYPES[code])
    data = (np.memmap(prefix + ".bin", mode="r", dtype=np.uint8)
            if os.path.getsize(prefix + ".bin") else b"")  # numpy maps no empty file
    tokens = [np.frombuffer(data, dtype, int(n), int(p)).tolist() if n else []
              for n, p in zip(lengths, pointers)]
    return {"dtype": dtype.name, "lengths": lengths.tolist(),
            "document_index": document_index.tolist(), "sequences": tokens}


if __name__ == "__main__":
    json.dump([read(prefix) for prefix in sys.argv[1:]], sys.stdout)
