"""The README demo: a small-file table compacted, verified and rolled back on
the embedded default (local Spark, embedded Derby Metastore, file:// warehouse).

Each step runs the engine exactly as the Ansible modules do: a separate
process per command, JSON on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "spark_app" / "run_lakekeeper.py"
STATE = Path(os.environ.get("LAKEKEEPER_DEMO_DIR", ROOT / ".lakekeeper" / "demo")).resolve()
TABLE = "demo.events"

SETUP = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {app!r})
    from lakekeeper_spark.session import build_session
    spark = build_session("local[2]", {state!r}, log_level="ERROR")
    spark.sql("CREATE DATABASE IF NOT EXISTS demo")
    spark.sql("CREATE EXTERNAL TABLE demo.events (id BIGINT, user STRING, amount DOUBLE) "
              "PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION 'file://{state}/data/events' "
              "TBLPROPERTIES ('parquet.compression'='SNAPPY')")
    for i, (dt, files) in enumerate([("2024-09-01", 120), ("2024-09-02", 80), ("2024-09-03", 1)]):
        (spark.range(i * 20000, (i + 1) * 20000)
              .selectExpr("id", "concat('user-', id % 977) AS user", "rand(42) * 100 AS amount")
              .repartition(files).createOrReplaceTempView("src"))
        spark.sql(f"INSERT INTO demo.events PARTITION (dt='{{dt}}') SELECT * FROM src")
    """
)


def engine(command: str, *extra: str) -> dict:
    argv = [sys.executable, str(APP), command, "--table", TABLE, "--state-dir", str(STATE), "--master", "local[2]",
            "--log-level", "WARNING", *extra]
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"engine {command} failed with exit code {proc.returncode}")
    doc = json.loads(proc.stdout)
    print(f"  ({time.time() - started:.1f} s, exit code {proc.returncode}) {doc['msg']}")
    return doc


def show(doc: dict) -> None:
    (t,) = doc["tables"]
    print(f"  {t['table']}: {t['status']} - {t['reason']}")
    print(f"  {'partition':<16}{'files before':>13}{'files after':>12}{'rows before':>12}{'rows after':>11}  status")
    for p in t["partitions"]:
        rb = "" if p.get("rows_before") is None else p["rows_before"]
        ra = "" if p.get("rows_after") is None else p["rows_after"]
        after = p["files_after"] if p["status"] != "planned" else p.get("target_files")
        print(f"  {p['spec'] or '(table)':<16}{p['files_before']:>13}{after:>12}{rb!s:>12}{ra!s:>11}  {p['status']}")


def count_files(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file() and not any(x.startswith((".", "_")) for x in p.relative_to(path).parts))


def main() -> int:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if STATE.exists():
        shutil.rmtree(STATE)
    STATE.mkdir(parents=True)
    data = STATE / "data" / "events"
    print(f"1. Creating {TABLE}: an EXTERNAL parquet table with many small files (state in {STATE})")
    subprocess.run([sys.executable, "-c", SETUP.format(app=str(APP.parent), state=str(STATE))], check=True,
                   stderr=subprocess.DEVNULL)
    print(f"   {count_files(data)} data files on disk")
    print("\n2. analyze (writes nothing)")
    show(engine("analyze"))
    print("\n3. compact (backup table, hidden staging, content verification: every value read back, directory swap)")
    doc = engine("compact")
    show(doc)
    print(f"   {count_files(data)} data files on disk; backup table {doc['tables'][0]['backup_table']}")
    print("\n4. compact again: nothing left to do")
    show(engine("compact"))
    print("\n5. rollback: the original files come back, byte for byte")
    show(engine("rollback"))
    print(f"   {count_files(data)} data files on disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
