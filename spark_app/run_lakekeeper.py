"""Entry point that spark-submit (or plain python) runs.

    spark-submit [...] run_lakekeeper.py compact --table db.events
    python run_lakekeeper.py analyze --database db --state-dir ~/.lakekeeper/state

The ``lakekeeper_spark`` package sits next to this file, or in a zip given
with ``--py-files``.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lakekeeper_spark.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
