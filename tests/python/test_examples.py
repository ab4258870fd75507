"""The Python examples run and say what they should (so they cannot rot)."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not (FASHION_MNIST / "train-images-idx3-ubyte.gz").exists(),
                    reason="needs the Debian package dataset-fashion-mnist")
def test_fashion_mnist_numpy():
    run = subprocess.run([sys.executable, str(ROOT / "examples/python/fashion_mnist_numpy.py"),
                          "--epochs", "1"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    accuracy = float(lines[0].split("test accuracy ")[1].split()[0])
    assert accuracy > 0.75, lines[0]
    assert lines[-1].endswith("the same batch as without the interruption: True"), lines[-1]
