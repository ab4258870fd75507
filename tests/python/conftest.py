"""pytest setup for stoke_loader's tests: they run against the installed package (python/test.sh
builds and installs it into .tools/venv first)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # reference.py


@pytest.fixture
def table():
    """Rows whose values name them: x[i] = [i*4, i*4+1, i*4+2, i*4+3], y[i] = i."""
    n = 23
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    y = np.arange(n, dtype=np.int64)
    return x, y
