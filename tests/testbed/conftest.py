import sys
from pathlib import Path

# Make the `testbed` package importable however pytest was started.
_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)

from testbed.pytest_plugin import hiveserver2, testbed  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
