"""Entry point that spark-submit (or plain python) runs.

    spark-submit [...] run_lakekeeper.py compact --table db.events
    python run_lakekeeper.py analyze --database db --state-dir ~/.lakekeeper/state

Run by plain python with a config file whose ``spark_submit.enabled`` is
true, it launches itself with spark-submit as lakekeeper 0.0.x's
``lakekeeper`` command did (lakekeeper_spark/launcher.py,
docs/upgrading-from-0.0.x.md):

    python run_lakekeeper.py --config-file lakekeeper.yaml compact --database db

The ``lakekeeper_spark`` package sits next to this file (also when this file
is reached through a symbolic link), or in a zip given with ``--py-files``.
"""

import os
import sys

HERE = os.path.realpath(__file__)
sys.path.insert(0, os.path.dirname(HERE))

from lakekeeper_spark.cli import main  # noqa: E402
from lakekeeper_spark.launcher import submit_if_configured  # noqa: E402

if __name__ == "__main__":
    launched = submit_if_configured(sys.argv[1:], HERE)
    sys.exit(main() if launched is None else launched)
