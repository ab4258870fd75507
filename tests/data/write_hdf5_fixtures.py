"""Writes the HDF5 and NetCDF files that test_hdf5.cpp reads back with stoke.

Usage: write_hdf5_fixtures.py <directory>
       write_hdf5_fixtures.py --fuzz-seeds <directory>  (the seeds of tests/fuzz/fuzz_hdf5: small
                                                         files whose variable is "x" or "/g/x")
Exits 77 (a skip) when h5py or netCDF4 cannot be imported, after writing SKIPPED (the reason)
into <directory>; writes COMPLETE last, when every file is there.

Every numeric array holds values made by a formula of its flat (row-major) index i, which the
test recomputes:
- integer dtypes: (i * 2654435761 + 12345) modulo 2**64, cast (wrapping) to the dtype;
- float32 and float64: i * 0.25 - 3 (exact in both).

Files:
- arrays.h5: every numeric dtype (contiguous and chunked), big-endian ones, a gzip-compressed
  chunked one, one in a group, an empty one, a group of 25, and what stoke refuses (strings,
  compound, variable-length, enum, opaque, float16, a scalar, an lzf-compressed one whose filter
  only h5py has);
- climate.nc: a NetCDF-4 file (netCDF4, the NetCDF-C library) with t2m(time, lat, lon) and
  forecast/precip(time, lat) in a group;
- corrupt.h5: a gzip-compressed variable (20 x 10, chunks of 5 rows) whose second chunk is
  garbage;
- classic.nc: a NetCDF-3 file (not HDF5); not_hdf5.txt: text.
"""
import os
import sys

SKIP = 77
fuzz_seeds = sys.argv[1] == "--fuzz-seeds"
directory = sys.argv[-1]
os.makedirs(directory, exist_ok=True)
for stale in ("COMPLETE", "SKIPPED"):
    if os.path.exists(os.path.join(directory, stale)):
        os.remove(os.path.join(directory, stale))

try:
    import numpy as np
    import h5py
    import netCDF4
except ImportError as error:
    reason = (f"cannot import h5py or netCDF4 ({error}); install them with "
              f"`{sys.executable} -m pip install h5py netCDF4`")
    with open(os.path.join(directory, "SKIPPED"), "w") as out:
        out.write(reason)
    print("SKIP: " + reason)
    sys.exit(SKIP)

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
          "float64"]


def values(dtype, shape):
    """The array of `dtype` and `shape` holding the formula's values."""
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        flat = i.astype(np.float64) * 0.25 - 3
    else:
        with np.errstate(over="ignore"):
            flat = i * np.uint64(2654435761) + np.uint64(12345)
    return flat.astype(dtype).reshape(shape)


def path(name):
    return os.path.join(directory, name)


def write_fuzz_seeds():
    """Small files, one layout each, whose variable is "x" (or "/g/x")."""
    layouts = {
        "contiguous": {},
        "chunked": {"chunks": (2, 3)},
        "gzip": {"chunks": (3, 3), "compression": "gzip", "shuffle": True},
        "fletcher32": {"chunks": (4, 3), "fletcher32": True},
        "scaleoffset": {"chunks": (4, 3), "scaleoffset": 2},
    }
    for name, options in layouts.items():
        with h5py.File(path(f"{name}.h5"), "w") as f:
            f.create_dataset("x", data=values("float32", (7, 3)), **options)
    with h5py.File(path("compact_big_endian.h5"), "w") as f:
        space = h5py.h5s.create_simple((4, 2))
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"x", h5py.h5t.IEEE_F64BE, space, plist).write(
            h5py.h5s.ALL, h5py.h5s.ALL, values("float64", (4, 2)))
    with h5py.File(path("group_int16.h5"), "w") as f:
        f.create_dataset("g/x", data=values("int16", (5, 2)), chunks=(2, 2))
        f.create_dataset("strings", data=np.array([b"ab"], dtype="S2"))
    with netCDF4.Dataset(path("netcdf4.nc"), "w", format="NETCDF4") as nc:
        nc.createDimension("t", None)
        nc.createDimension("y", 3)
        nc.createVariable("x", "f4", ("t", "y"), zlib=True)[:] = values("float32", (4, 3))
    print(f"wrote the fuzz_hdf5 seeds into {directory}")


if fuzz_seeds:
    write_fuzz_seeds()
    sys.exit(0)

# arrays.h5 (the default file format bounds: what h5py users write).
with h5py.File(path("arrays.h5"), "w") as f:
    for dtype in DTYPES:
        f.create_dataset(f"contiguous/{dtype}", data=values(dtype, (10, 3)))
    # 50 rows of 6 x 7 in chunks of 4 x 3 x 7: 13 chunk rows (the last partial), 2 chunks across.
    f.create_dataset("chunked_f32", data=values("float32", (50, 6, 7)), chunks=(4, 3, 7))
    f.create_dataset("chunked_i16", data=values("int16", (50, 6, 7)), chunks=(4, 3, 7))
    f.create_dataset("rank1_i64", data=values("int64", (25,)), chunks=(4,))
    # 9000 chunks: stoke reads it in pieces of 4096 chunks (2048 chunk rows of 2 chunks).
    f.create_dataset("many_chunks_i32", data=values("int32", (9000, 2)), chunks=(2, 1))
    f.create_dataset("big_endian_f64", data=values("float64", (12, 5)).astype(">f8"))
    f.create_dataset("big_endian_u32", data=values("uint32", (12, 5)).astype(">u4"),
                     chunks=(5, 5))
    f.create_dataset("gzip_f32", data=values("float32", (64, 10)), chunks=(5, 4),
                     compression="gzip", compression_opts=6, shuffle=True)
    f.create_dataset("group/sub/temperature", data=values("float32", (8, 2, 3)))
    f.create_dataset("empty_rows", data=values("float32", (0, 3)))
    for k in range(25):
        f.create_dataset(f"many/v{k:02d}", data=values("uint8", (2,)))
    # Refused.
    f.create_dataset("strings", data=np.array([b"ab", b"cd", b"ef"], dtype="S2"))
    f.create_dataset("vlen_strings", data=["one", "two"], dtype=h5py.string_dtype())
    f.create_dataset("compound", data=np.zeros(4, dtype=[("a", "<i4"), ("b", "<f8")]))
    f.create_dataset("vlen_ints", (3,), dtype=h5py.vlen_dtype(np.int32))
    f.create_dataset("enum", data=np.zeros(4, dtype=np.int8),
                     dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1}, basetype="i1"))
    f.create_dataset("bools", data=np.array([True, False, True]))
    f.create_dataset("opaque", data=np.array([b"\x01\x02\x03\x04"] * 2, dtype="V4"))
    f.create_dataset("float16", data=values("float16", (4, 2)))
    f.create_dataset("scalar", data=np.float32(1.5))
    f.create_dataset("lzf", data=values("float32", (6, 2)), chunks=(3, 2), compression="lzf")

# corrupt.h5: a gzip-compressed variable whose second chunk holds garbage (the file opens, the
# read of that chunk fails).
with h5py.File(path("corrupt.h5"), "w") as f:
    f.create_dataset("gzip_f32", data=values("float32", (20, 10)), chunks=(5, 10),
                     compression="gzip")
    chunk = f["gzip_f32"].id.get_chunk_info(1)
    garbage = (chunk.byte_offset, chunk.size)
with open(path("corrupt.h5"), "r+b") as out:
    out.seek(garbage[0])
    out.write(b"\xff" * garbage[1])

# climate.nc, written by the NetCDF-C library: t2m(time, lat, lon), time unlimited.
with netCDF4.Dataset(path("climate.nc"), "w", format="NETCDF4") as nc:
    nc.createDimension("time", None)
    nc.createDimension("lat", 4)
    nc.createDimension("lon", 5)
    nc.createVariable("time", "f8", ("time",))[:] = np.arange(24, dtype=np.float64)
    nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-45, 45, 4)
    nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 288, 5)
    t2m = nc.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                            chunksizes=(5, 4, 5))
    t2m[:] = values("float32", (24, 4, 5))
    forecast = nc.createGroup("forecast")
    precip = forecast.createVariable("precip", "f8", ("time", "lat"))
    precip[:] = values("float64", (24, 4))

with netCDF4.Dataset(path("classic.nc"), "w", format="NETCDF3_CLASSIC") as nc:
    nc.createDimension("x", 3)
    nc.createVariable("v", "f4", ("x",))[:] = np.arange(3, dtype=np.float32)

with open(path("not_hdf5.txt"), "w") as out:
    out.write("this is not an HDF5 file\n")

with open(path("COMPLETE"), "w") as out:
    out.write(f"h5py {h5py.version.version} (HDF5 {h5py.version.hdf5_version}), netCDF4 "
              f"{netCDF4.__version__} (NetCDF-C {netCDF4.__netcdf4libversion__})\n")
print(f"wrote the HDF5 fixtures into {directory}")
