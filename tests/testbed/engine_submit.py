"""The engine CLI (spark_app/run_lakekeeper.py) under the test bed's
spark-submit, as a cluster runs it: shared by the older-Spark lanes' test
(test_engine_on_testbed.py) and the main line's playbook scenario on the
test bed (tests/playbooks/test_playbooks.py), which runs it once beside the
playbooks instead of setting up a world of its own."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "spark_app" / "run_lakekeeper.py"


def app_python() -> str:
    """The application's Python: on a Spark lane the lane's Python packed by
    the python_env role (scripts/spark_lanes.py), as on a cluster."""
    return os.environ.get("LAKEKEEPER_APP_PYTHON", sys.executable)


def submit_engine(testbed, workdir: Path, command: str, *args: str) -> tuple[dict, str]:
    """spark-submit the engine with COMMAND and ARGS; returns (the result
    document, the run's output). Checks the CLI's output contract: the JSON
    document written to --result-file is also the last thing printed, from a
    line "{" (spark-submit's PythonRunner merges the driver's stderr into
    stdout)."""
    result = workdir / f"{command}-{len(list(workdir.glob(command + '-*.json')))}.json"
    p = testbed.spark_submit(APP, command, *args, "--result-file", str(result),
                             confs={"spark.pyspark.python": app_python()})
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(result.read_text())
    lines = p.stdout.rstrip().splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    try:
        printed = json.loads("\n".join(lines[start:]))
    except ValueError as exc:
        raise AssertionError(f"stdout does not end with the JSON document ({exc}):\n"
                             + "\n".join(lines[start:])[-3000:]) from exc
    assert printed == doc
    # no Metastore call cut and retried a second later: the Hive client's authorization is set up before the
    # first partition listing (HiveClient.settle_authorization), which otherwise closed the client under it
    output = p.stdout + p.stderr
    at = output.find("MetaStoreClient lost connection")
    assert at < 0, output[max(0, at - 500):at + 2500]
    return doc, output


def check_cluster_run(doc: dict, output: str) -> None:
    """What a run on the standalone cluster reports: the cluster's Spark
    (this test's pyspark, on each lane its own) and the application's Python,
    and units as concurrent jobs in FAIR pools under spark-submit too."""
    import pyspark  # pylint: disable=import-outside-toplevel

    assert doc["runtime"]["spark"] == pyspark.__version__, doc["runtime"]
    assert doc["runtime"]["python"] == ".".join(map(str, sys.version_info[:3])), doc["runtime"]
    prefix = Path(app_python()).parent.parent.resolve()
    assert Path(doc["runtime"]["python_prefix"]).resolve() == prefix, doc["runtime"]
    assert "master spark://" in output and "scheduler mode FAIR" in output, output[-3000:]
