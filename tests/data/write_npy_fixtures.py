"""Writes the .npy and .npz files that test_npy.cpp reads back with stoke.

Usage: write_npy_fixtures.py <directory>
Exits 77 (a skip) when numpy cannot be imported.

Every array holds values made by a formula of its flat (row-major) index i, which the test
recomputes:
- integer dtypes: (i * 2654435761 + 12345) modulo 2**64, cast (wrapping) to the dtype;
- float32 and float64: i * 0.25 - 3 (exact in both);
- bool: i % 3 == 0.
"""
import os
import sys

SKIP = 77

try:
    import numpy as np
except ImportError as error:
    print(f"SKIP: cannot import numpy ({error}); install it with "
          f"`{sys.executable} -m pip install numpy`")
    sys.exit(SKIP)

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float32", "float64"]


def values(dtype, shape):
    """The array of `dtype` and `shape` holding the formula's values."""
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    kind = np.dtype(dtype).kind
    if kind == "b":
        flat = (i % np.uint64(3)) == 0
    elif kind == "f":
        flat = (i.astype(np.float64) * 0.25 - 3.0).astype(dtype)
    else:
        flat = (i * np.uint64(2654435761) + np.uint64(12345)).astype(dtype)
    return flat.reshape(shape)


def save_version(path, array, version):
    with open(path, "wb") as out:
        np.lib.format.write_array(out, array, version=version)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)  # noqa: E731

    arrays = {dtype: values(dtype, (5, 3)) for dtype in DTYPES}
    for dtype, array in arrays.items():
        np.save(path(f"{dtype}.npy"), array)
    shapes = {
        "float32_4d": values("float32", (2, 3, 4, 5)),
        "float64_1d": values("float64", (7,)),
        "empty": values("float32", (0, 4)),
    }
    for name, array in shapes.items():
        np.save(path(f"{name}.npy"), array)
    save_version(path("version2.npy"), values("float32", (3, 4)), (2, 0))
    save_version(path("version3.npy"), values("float32", (3, 4)), (3, 0))

    # What stoke refuses.
    np.save(path("fortran.npy"), np.asfortranarray(values("float64", (3, 4))))
    np.save(path("object.npy"), np.array([1, "a", None], dtype=object), allow_pickle=True)
    np.save(path("big_endian.npy"), values("int32", (4,)).astype(">i4"))
    np.save(path("scalar.npy"), np.array(2.5, dtype=np.float32))
    np.save(path("structured.npy"), np.zeros(3, dtype=[("x", "<f4"), ("y", "<i4")]))
    np.save(path("float16.npy"), np.zeros(3, dtype=np.float16))

    members = dict(arrays)
    members.update(shapes)
    np.savez(path("stored.npz"), **members)
    # A big member inflated in several pieces, and one that compresses a thousandfold.
    members["large"] = values("float32", (300000, 4))
    members["zeros"] = np.zeros((1 << 20,), dtype=np.float64)
    np.savez_compressed(path("compressed.npz"), **members)
    np.savez(path("positional.npz"), values("int16", (2, 2)), values("float64", (3,)))
    np.savez(path("with_scalar.npz"), scalar=np.array(1.5), row=values("float32", (1, 2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
