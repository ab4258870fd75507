"""Checks that the reference `safetensors` package reads what stoke writes.

Usage: check_safetensors.py <stoke_write_safetensors_fixture executable>
Exits 77 (CTest's SKIP_RETURN_CODE) when numpy or safetensors cannot be imported.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77

try:
    import numpy as np
    import safetensors
    import safetensors.numpy
except ImportError as error:
    print(f"SKIP: cannot import the safetensors package or numpy ({error}); "
          f"install them with `{sys.executable} -m pip install safetensors numpy`")
    sys.exit(SKIP)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory(prefix="stoke-safetensors-") as directory:
        path = os.path.join(directory, "fixture.safetensors")
        subprocess.run([sys.argv[1], path], check=True)
        tensors = safetensors.numpy.load_file(path)
        with safetensors.safe_open(path, framework="np") as handle:
            metadata = handle.metadata()

    expected = {
        "layer.weight": (np.arange(12, dtype=np.float32) * np.float32(0.5) - np.float32(1.0))
        .reshape(3, 4),
        "layer.bias": np.array([0.25, -4.0, 1e-3], dtype=np.float32),
        "step": np.array([123456789012, -7], dtype=np.int64),
        "mask": np.array([1, 0, 1], dtype=np.uint8),
        "scale": np.array(2.5, dtype=np.float32),
    }
    failures = []
    if sorted(tensors) != sorted(expected):
        failures.append(f"names: got {sorted(tensors)}, expected {sorted(expected)}")
    for name, want in expected.items():
        got = tensors.get(name)
        if got is None:
            continue
        if got.dtype != want.dtype or got.shape != want.shape:
            failures.append(f"{name}: got {got.dtype}{list(got.shape)}, "
                            f"expected {want.dtype}{list(want.shape)}")
        elif not np.array_equal(got, want):
            failures.append(f"{name}: got {got.tolist()}, expected {want.tolist()}")
    if metadata != {"epoch": "3", "writer": "stoke"}:
        failures.append(f"metadata: got {metadata}")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"OK: safetensors {safetensors.__version__} read {len(tensors)} tensors and the metadata")
    return 0


if __name__ == "__main__":
    sys.exit(main())
