"""A program may end at any point of an epoch, also with a daemon thread still iterating."""

import subprocess
import sys

import pytest

from exit_programs import PROGRAMS


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_program_ends_cleanly(name):
    run = subprocess.run([sys.executable, "-c", PROGRAMS[name]], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "terminate" not in run.stderr
