"""Tests of scripts/failure_tails.py, which ends a failed ./scripts/test run with the output of
each failed ctest test: every failing status ctest prints is found (a crash's "Exception:
SegFault" among them), with the lines the test printed, and passed or skipped tests are not.

Run by ctest (label `book`, the run's own reporting) or directly with any Python 3.
"""

import importlib.util
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "failure_tails.py"

LOG = """\
      Start 66: stoke_module_mixed
47/97 Test #65: stoke_module_import ..........................   Passed    0.02 sec
48/97 Test #66: stoke_module_mixed ...........................***Exception: SegFault  0.01 sec
printed before the crash

49/97 Test #67: a_failing_test ...............................***Failed    0.30 sec
the assertion
50/97 Test #68: a_hung_test ..................................***Timeout 300.01 sec
51/97 Test #69: a_skipped_test ...............................***Skipped   0.01 sec
skipped: no GPU
52/97 Test #70: a_passing_test ...............................   Passed    0.50 sec

99% tests passed, 3 tests failed out of 6
"""


def load_script():
    """scripts/failure_tails.py as a module."""
    spec = importlib.util.spec_from_file_location("failure_tails", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FailedOutputs(unittest.TestCase):
    def test_every_failing_status_is_found_with_its_output(self):
        found = load_script().failed_outputs(LOG)
        self.assertEqual(
            [(test, status) for test, status, _ in found],
            [("stoke_module_mixed", "Exception: SegFault"), ("a_failing_test", "Failed"),
             ("a_hung_test", "Timeout")])
        self.assertEqual(found[0][2], ["printed before the crash", ""])
        self.assertEqual(found[1][2], ["the assertion"])
        self.assertEqual(found[2][2], [])


if __name__ == "__main__":
    unittest.main()
