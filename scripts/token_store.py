#!/usr/bin/env python3
"""Writes token stores (Megatron-LM's .bin + .idx) with stoke_loader's numpy writer
(python/src/stoke_loader/token_store_writer.py, loaded by its path: no native module needed):
the writer of the corpus recipes (scripts/make-corpus), and what tests/sequences checks stoke's
reader against. As a program it writes the stores JSON files describe (for the tests):
    token_store.py from-json SPEC.json PREFIX [SPEC.json PREFIX]...
SPEC: {"dtype": "uint16", "documents": [[[1, 2], [3]], [[4, 5, 6]]]} (documents of sequences).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src",
                                "stoke_loader"))
from token_store_writer import CODES, TokenStoreWriter, write_texts  # noqa: E402,F401


def write_from_json(spec_path, prefix):
    """Writes the store that the JSON file `spec_path` describes."""
    with open(spec_path) as f:
        spec = json.load(f)
    writer = TokenStoreWriter(prefix, np.dtype(spec["dtype"]))
    for document in spec["documents"]:
        for sequence in document:
            writer.add_sequence(sequence)
        writer.end_document()
    writer.finish()


if __name__ == "__main__":
    if len(sys.argv) < 4 or len(sys.argv) % 2 != 0 or sys.argv[1] != "from-json":
        sys.exit(__doc__)
    for spec, prefix in zip(sys.argv[2::2], sys.argv[3::2]):
        write_from_json(spec, prefix)
