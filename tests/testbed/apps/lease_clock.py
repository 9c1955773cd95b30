"""The lease on a real NameNode: liveness read on the filesystem's clock.

A separate Spark process (local master) configured by HADOOP_CONF_DIR from
the test bed, with the engine on its path (argv[1]: spark_app). In one
journal directory on HDFS (argv[2]):

- a holder takes the lease while its own clock is an hour behind, and its
  heartbeat file is written: a second run finds the table locked (on the
  holder's clock it would look an hour stale);
- the heartbeat's modification time is the NameNode's (close to a probe
  file's, not to the holder's lagging clock);
- the holder stops (its heartbeat held, as a stopped process's): after the
  timeout on the NameNode's clock another run takes the lease over, and the
  holder's next check fails with lease_lost.

Prints one line "RESULT {json}".
"""
import json
import sys
import time

sys.path.insert(0, sys.argv[1])

from pyspark.sql import SparkSession  # noqa: E402

from lakekeeper_spark.protocol import lease as L  # noqa: E402  pylint: disable=wrong-import-position
from lakekeeper_spark.report.errors import LakekeeperError  # noqa: E402  pylint: disable=wrong-import-position
from lakekeeper_spark.storage.fs import HadoopFS  # noqa: E402  pylint: disable=wrong-import-position


def main() -> None:
    spark = SparkSession.builder.master("local[1]").getOrCreate()
    fs = HadoopFS(spark)
    jdir = fs.qualify(sys.argv[2])
    out = {}
    real_time = time.time
    time.time = lambda: real_time() - 3600  # the holder's clock an hour behind
    try:
        held = L.acquire(fs, jdir, "20240101T000000-aaaaaa", "lk.clock", "compact", timeout=30)
        beat = f"{jdir}/lease.beat-20240101T000000-aaaaaa"
        deadline = real_time() + 30
        while not fs.mtime(beat) and real_time() < deadline:
            time.sleep(0.2)
    finally:
        time.time = real_time
    out["beat_written"] = bool(fs.mtime(beat))
    probe = L.filesystem_now(fs, jdir, "20240101T000000-probe0")
    out["beat_age_on_namenode_clock"] = round(probe - fs.mtime(beat) / 1000.0, 1)
    try:
        L.acquire(fs, jdir, "20240101T000000-bbbbbb", "lk.clock", "cleanup", timeout=30)
        out["second_run"] = "took it"
    except L.LeaseHeld as exc:
        out["second_run"] = "locked" if "20240101T000000-aaaaaa" in str(exc) else str(exc)
    held._stop.set()  # pylint: disable=protected-access  # the holder stops: no heartbeat any more
    held._thread.join(10)  # pylint: disable=protected-access
    time.sleep(36)
    taker = L.acquire(fs, jdir, "20240101T000000-cccccc", "lk.clock", "recover", timeout=30)
    out["taken_over"] = (taker.taken_over or {}).get("reason", "")
    try:
        held.check(max_age=0)
        out["holder_check"] = "passed"
    except LakekeeperError as exc:
        out["holder_check"] = exc.code
    taker.release()
    out["left"] = sorted(n for n, _d in fs.list_names(jdir))
    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
