"""What this build of stoke_loader was built with.

NumPy arrays, records, ``.npy`` and ``.npz`` files are always there. HDF5 (``hdf5``, HDF5
shards) and images (``image_folder``, ``tar_shards``) are built where their libraries were found
when stoke_loader was built; a build without one raises :class:`stoke_loader.NotBuiltError`
naming what to install. To see which, without trying::

    python -m stoke_loader.features

    import stoke_loader.features
    stoke_loader.features.available()   # {"hdf5": True, "images": False}
"""

from __future__ import annotations

from . import _native
from ._images import _NO_IMAGES
from ._sources import _NO_HDF5

# Each optional part: what it reads, and what a build without it says.
_PARTS = {
    "hdf5": ("HDF5 and NetCDF-4 variables: hdf5(), shards(variable=)", _NO_HDF5),
    "images": ("image folders and WebDataset tar shards: image_folder(), tar_shards()",
               _NO_IMAGES),
}


def available() -> dict[str, bool]:
    """Each optional part of stoke_loader (``"hdf5"``, ``"images"``): whether this build has
    it."""
    return {"hdf5": bool(_native.has_hdf5), "images": bool(_native.has_images)}


def describe() -> str:
    """One line per optional part: what it reads, or, where this build lacks it, what to
    install."""
    lines = []
    for name, built in available().items():
        reads, missing = _PARTS[name]
        lines.append(f"{name}: yes ({reads})" if built else f"{name}: no. {missing}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe())
