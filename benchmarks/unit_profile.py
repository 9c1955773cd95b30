"""Where a partition's time goes in a compaction: the per-step profile and
the calls behind it (issue "Performance II": profile before optimising).

    python benchmarks/unit_profile.py                          # embedded default (file://, Derby)
    python benchmarks/unit_profile.py --testbed BED.json       # HDFS, Metastore service, standalone
    python benchmarks/unit_profile.py --partitions 10,40 --files 4 --parallelism 4 --json out.json

Two partitioned Parquet tables (P1 and P2 partitions of F small files each)
are compacted in this process on one session, through the same handlers
the CLI runs. Every step of ``commands/compact.py`` is timed, and every
call through the engine's adapters is counted: ``HadoopFS`` (the Hadoop
FileSystem API: NameNode calls), ``Catalog`` (the Metastore; beside it Spark's own count of
its Hive client's Metastore calls, ``metastore.hive_client_calls``),
``Journal`` records (a unit's: a line appended and synced, shared by units recording at once), Spark
jobs and the driver's py4j gateway calls (``gateway.calls``: each a round
trip from Python to the driver's JVM, whatever it is for). On a Hadoop 3.5
test bed (or with ``--namenode-http HOST:PORT``) the NameNode's own count of
the RPCs it served, by method (``namenode.<method>``, from its JMX
``RpcDetailedActivity``; ``namenode.rpcs`` their sum): the adapter's calls
are Python methods, one of which may make several RPCs or none, and the
executors' reads and writes are RPCs too. The DataNodes' own RPCs
(heartbeats, block reports) are left out. ``--columns``
widens the tables (warehouse tables have dozens): a cost per column shows
there. A
figure per partition is the slope between the two tables, (x2 - x1) /
(P2 - P1); per table, what is left at P = 0. Step times are summed over the
units, which run ``parallelism`` at a time: per partition they are the work
a unit does, not wall time. Nested steps overlap (a journal record written
inside the swap counts in both). ``unit.in_jobs`` is a unit's time holding
its job slot (to its last Spark job), ``unit.after_jobs`` the rest of it (the
swap and what goes with it, run beside the next units' jobs); in jobs over
wall time per partition: how many units had Spark jobs at once, on average.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import sys
import threading
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "spark_app"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# commands/compact.py's own steps, by the name it calls them by
STEPS = [
    "load_table", "recover_table", "plan", "apply_delete_ratio", "resolve_storage", "check_hdfs_units",
    "read_facts", "check_schema_drift", "resolve_unit_formats", "leftovers", "space_check", "payload_fraction",
    "create_backup", "write_staging", "_verify_content", "move_kept", "verify_staging", "carry_attributes",
    "recheck_before_swap", "check_unchanged", "swap_in", "adopt_late_files", "repoint", "update_statistics",
]


class Meter:
    """Counts and times calls; per thread, only the outermost call of a
    group counts (an adapter method calling another is one call)."""

    def __init__(self) -> None:
        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self._depth = threading.local()
        self._lock = threading.Lock()

    def wrap(self, group: str, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        key = f"{group}.{name}"

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self._depth, group, 0)
            setattr(self._depth, group, depth + 1)
            outer = getattr(self._depth, "current_step", None)
            if group == "step":
                self._depth.current_step = name  # the step the gateway calls made meanwhile count for
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth.current_step = outer
                setattr(self._depth, group, depth)
                if depth == 0:
                    with self._lock:
                        self.calls[key] += 1
                        self.seconds[key] += time.perf_counter() - t0

        return timed

    def snapshot(self) -> dict[str, tuple[int, float]]:
        with self._lock:
            return {k: (self.calls[k], self.seconds[k]) for k in self.calls}


def instrument(meter: Meter) -> None:
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.commands import compact
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.protocol.journal import Journal

    for cls, group in ((HadoopFS, "fs"), (Catalog, "catalog")):
        calls: dict[str, Any] = {}
        for klass in reversed(cls.__mro__[:-1]):  # with its bases: both classes are split by concern into mixins
            calls.update(vars(klass))
        for name, fn in list(calls.items()):
            if callable(fn) and not name.startswith("_") and not isinstance(fn, (staticmethod, classmethod)):
                setattr(cls, name, meter.wrap(group, name, fn))
    for name in ("start", "table_step", "unit_step"):
        setattr(Journal, name, meter.wrap("journal", name, getattr(Journal, name)))
    setattr(HadoopFS, "copy_permissions", meter.wrap("step", "copy_permissions", getattr(HadoopFS, "copy_permissions")))
    for name in STEPS:
        setattr(compact, name, meter.wrap("step", name, getattr(compact, name)))
    time_job_slots(meter, compact)
    count_gateway_calls(meter)


def time_job_slots(meter: Meter, compact: Any) -> None:
    """``unit.in_jobs``: a unit's time holding its job slot (``context.JobSlot``,
    from its start to its last Spark job); ``unit.after_jobs``: the rest of the
    unit (the checks before the swap, the swap, its journal record, its
    Metastore changes), which runs without the slot. In jobs per partition
    over wall per partition: how many units had Spark jobs at once, on
    average, of ``parallelism``."""
    from lakekeeper_spark.catalog import context

    released = threading.local()
    init, release, unit = context.JobSlot.__init__, context.JobSlot.release, compact._compact_unit  # pylint: disable=protected-access

    def add(key: str, seconds: float) -> None:
        with meter._lock:  # pylint: disable=protected-access
            meter.calls[key] += 1
            meter.seconds[key] += seconds

    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._profile_t0 = time.perf_counter()  # pylint: disable=protected-access

    def timed_release(self: Any) -> None:
        t0 = getattr(self, "_profile_t0", None)
        release(self)
        if t0 is not None:
            self._profile_t0 = None  # pylint: disable=protected-access
            released.at = time.perf_counter()
            add("unit.in_jobs", released.at - t0)

    def timed_unit(*args: Any, **kwargs: Any) -> Any:
        released.at = None
        try:
            return unit(*args, **kwargs)
        finally:
            if released.at is not None:
                add("unit.after_jobs", time.perf_counter() - released.at)

    context.JobSlot.__init__, context.JobSlot.release = timed_init, timed_release
    compact._compact_unit = timed_unit  # pylint: disable=protected-access


# LAKEKEEPER_PROFILE_KINDS=1: the gateway's calls by step and kind too (``gateway@<step>:<kind>``; many lines)
BY_STEP_AND_KIND = os.environ.get("LAKEKEEPER_PROFILE_KINDS") == "1"


def count_gateway_calls(meter: Meter) -> None:
    """Every command the Python driver sends to its JVM (py4j's pinned-thread
    client, as PySpark runs it, and its classic one), counted as
    ``gateway.calls``."""
    import py4j.clientserver
    import py4j.java_gateway

    for cls in (py4j.clientserver.ClientServerConnection, py4j.java_gateway.GatewayConnection):
        send = cls.send_command

        def counted(self: Any, command: str, _send: Callable[..., Any] = send) -> Any:
            t0 = time.perf_counter()
            try:
                return _send(self, command)
            finally:
                spent = time.perf_counter() - t0
                step = getattr(meter._depth, "current_step", None) or "(no step)"  # pylint: disable=protected-access
                with meter._lock:  # pylint: disable=protected-access
                    meter.calls["gateway.calls"] += 1
                    meter.seconds["gateway.calls"] += spent
                    meter.calls[f"gateway@{step}"] += 1  # by the step of commands/compact.py that made them
                    meter.seconds[f"gateway@{step}"] += spent
                    meter.calls[f"gateway:{gateway_kind(command)}"] += 1  # by what was asked of the JVM
                    if BY_STEP_AND_KIND:
                        meter.calls[f"gateway@{step}:{gateway_kind(command)}"] += 1

        cls.send_command = counted


def gateway_kind(command: str) -> str:
    """What a py4j command asks of the JVM, from its first lines: a method's
    name for a call (``c``), the class for a constructor (``i``), a
    finalizer's release of an object (``m d``: each Python wrapper of a JVM
    object the driver drops), a class or package lookup (``r``), an array's
    or a list's element (``a``, ``l``)."""
    lines = command.split("\n", 4)
    head = lines[0]
    if head == "c" and len(lines) > 2:
        return f"call {lines[2]}"
    if head == "i" and len(lines) > 1:
        return f"new {lines[1].rsplit('.', 1)[-1]}"
    if head in ("m", "r", "a", "l") and len(lines) > 1:
        return {"m": "release", "r": "lookup", "a": "array", "l": "list"}[head] + f" {lines[1]}"
    return head


# DatanodeProtocol's methods: the DataNodes' heartbeats and reports, on the same port, not the clients' calls
DATANODE_RPCS = {"SendHeartbeat", "SendLifeline", "BlockReport", "CacheReport", "BlockReceivedAndDeleted",
                 "ErrorReport", "VersionRequest", "RegisterDatanode", "ReportBadBlocks", "CommitBlockSynchronization"}


def namenode_http(args: argparse.Namespace) -> str | None:
    """HOST:PORT of the NameNode's web server: ``--namenode-http``, else
    what a Hadoop 3.5 test bed's effective configuration says (a 2.7 bed
    binds port 0 and does not write it down: not counted there)."""
    if args.namenode_http:
        return args.namenode_http
    if not args.testbed:
        return None
    import xml.etree.ElementTree as ET

    with open(args.testbed, encoding="utf-8") as f:
        run_dir = json.load(f).get("run_dir", "")
    site = os.path.join(run_dir, "conf", "hadoop-effective", "hdfs-site.xml")
    if not os.path.exists(site):
        return None
    for prop in ET.parse(site).getroot().iter("property"):
        if prop.findtext("name") == "dfs.namenode.http-address":
            return (prop.findtext("value") or "").replace("localhost", "127.0.0.1") or None
    return None


def namenode_rpcs(address: str | None) -> dict[str, int]:
    """The NameNode's count of client RPCs served so far, by method, once it
    has settled: its JMX answers from a cache refreshed at most once a
    metrics period (10 s), so it is read until two reads a period apart
    agree (the clients' RPCs have ended; the DataNodes' are left out)."""
    if not address:
        return {}
    last = _namenode_rpcs_now(address)
    for _attempt in range(8):
        time.sleep(JMX_CACHE_SECONDS)
        now = _namenode_rpcs_now(address)
        if now == last:
            break
        last = now
    return last


JMX_CACHE_SECONDS = 11


def _namenode_rpcs_now(address: str) -> dict[str, int]:
    """The NameNode's JMX ``RpcDetailedActivityForPort*`` (``<Method>NumOps``) as it answers now."""
    import urllib.request

    url = f"http://{address}/jmx?qry=Hadoop:service=NameNode,name=RpcDetailedActivityForPort*"
    with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - the bed's NameNode on loopback
        beans = json.load(r).get("beans", [])
    out: collections.Counter = collections.Counter()
    for bean in beans:
        for key, value in bean.items():
            if not key.endswith("NumOps") or key.startswith(("Overall", "Deferred")):
                continue
            method = key[: -len("NumOps")]
            if method not in DATANODE_RPCS and isinstance(value, int):
                out[method] += value
    return dict(out)


def session(args: argparse.Namespace, state: str) -> tuple[Any, str]:
    from lakekeeper_spark.session import build_session

    confs = {"spark.sql.shuffle.partitions": "4", "spark.ui.retainedJobs": "100000"}
    if args.testbed:
        sys.path.insert(0, os.path.join(ROOT, "tests", "testbed"))
        from testbed.bed import Testbed  # pylint: disable=import-error

        bed = Testbed.load(args.testbed)
        confs.update(dict(bed.spark_confs(python=sys.executable)), **{"spark.executor.memory": "512m"})
        spark = build_session(bed.master_url, None, confs, log_level="ERROR")
        base = spark.conf.get("spark.hadoop.fs.defaultFS").rstrip("/") + f"/lk-unit-profile/{int(time.time())}"
    else:
        spark = build_session(args.master, state, confs, log_level="ERROR")
        base = "file://" + os.path.join(state, "data")
    return spark, base


def extra_columns(columns: int) -> list[tuple[str, str, str]]:
    """Columns 3..N of a ``--columns N`` table: (name, type, value from ``id``),
    a mix of the types warehouse tables carry."""
    kinds = [("BIGINT", "id * {i}"), ("STRING", "concat('s{i}_', id % 97)"), ("DOUBLE", "id / {i}.0"),
             ("DATE", "date_add(DATE'2024-01-01', CAST(id % 365 AS INT))"), ("DECIMAL(18,2)", "CAST(id / 7 AS DECIMAL(18,2))")]
    out = []
    for i in range(3, columns + 1):
        kind, expr = kinds[i % len(kinds)]
        out.append((f"c{i}", kind, expr.format(i=i)))
    return out


def make_table(spark: Any, fs: Any, base: str, name: str, partitions: int, files: int, rows: int,
               columns: int = 2) -> str:
    """``prof.<name>``: ``partitions`` partitions of ``files`` Parquet files
    of ``rows`` rows each (copies of one seed file, as a streaming writer
    leaves them) and ``columns`` columns, registered through the engine's
    ``Catalog.add_partitions``."""
    from lakekeeper_spark.catalog.catalog import Catalog

    extra = extra_columns(columns)
    seed = f"{base}/_seed{columns}"
    if not fs.exists(seed):
        spark.range(rows).selectExpr("id", "concat('v', id) AS v",
                                     *[f"CAST({e} AS {t}) AS {n}" for n, t, e in extra]).coalesce(1).write.parquet(seed)
    (seed_file,) = [n for n, is_dir in fs.list_names(seed) if not is_dir and n.endswith(".parquet")]
    location = f"{base}/{name}"
    for p in range(partitions):
        for f in range(files):
            fs.copy_file(f"{seed}/{seed_file}", f"{location}/dt={p:05d}/part-{f:05d}.parquet")
    spark.sql("CREATE DATABASE IF NOT EXISTS prof")
    spark.sql(f"DROP TABLE IF EXISTS prof.{name}")
    cols = "".join(f", {n} {t}" for n, t, _e in extra)
    spark.sql(f"CREATE EXTERNAL TABLE prof.{name} (id BIGINT, v STRING{cols}) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{location}'")
    Catalog(spark).add_partitions("prof", name, [({"dt": f"{p:05d}"}, f"{location}/dt={p:05d}")
                                                 for p in range(partitions)])
    return f"prof.{name}"


def jobs(spark: Any) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def hive_calls(spark: Any) -> int:
    """Spark's count of its Hive client's calls to the Metastore (``recordHiveCall``)."""
    from lakekeeper_spark.compat.jvm import java_class

    metrics = java_class(spark.sparkContext._jvm, "org.apache.spark.metrics.source.HiveCatalogMetrics")
    return int(metrics.METRIC_HIVE_CLIENT_CALLS().getCount())


def profile_one(spark: Any, meter: Meter, table: str, parallelism: int, nn: str | None = None) -> dict[str, Any]:
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.cli import _run_tables
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id

    before, jobs_before, hive_before = meter.snapshot(), jobs(spark), hive_calls(spark)
    rpcs_before = namenode_rpcs(nn)
    ctx = Context(spark, HadoopFS(spark), Catalog(spark), build_settings({}, {"parallelism": parallelism}),
                  new_run_id())
    t0 = time.perf_counter()
    (res,) = _run_tables(ctx, "compact", [table], None)
    wall = time.perf_counter() - t0
    after = meter.snapshot()
    delta = {k: (c - before.get(k, (0, 0.0))[0], s - before.get(k, (0, 0.0))[1]) for k, (c, s) in after.items()}
    compacted = sum(1 for p in res.get("partitions", []) if p["status"] == "compacted")
    if res["status"] != "compacted":
        raise SystemExit(f"{table}: {res['status']}: {res.get('reason')}")
    delta["metastore.hive_client_calls"] = (hive_calls(spark) - hive_before, 0.0)
    if nn:
        rpcs = {m: n - rpcs_before.get(m, 0) for m, n in namenode_rpcs(nn).items()}
        delta.update({f"namenode.{m}": (n, 0.0) for m, n in rpcs.items() if n})
        delta["namenode.rpcs"] = (sum(rpcs.values()), 0.0)
    return {"table": table, "wall": wall, "units": compacted, "jobs": jobs(spark) - jobs_before,
            "calls": {k: v for k, v in delta.items() if v[0]}}


def slope(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per partition (slope) and per table (intercept) of every figure."""
    dp = b["units"] - a["units"]
    out: dict[str, Any] = {}
    keys = sorted(set(a["calls"]) | set(b["calls"]))
    for k in keys:
        (c1, s1), (c2, s2) = a["calls"].get(k, (0, 0.0)), b["calls"].get(k, (0, 0.0))
        per_c, per_s = (c2 - c1) / dp, (s2 - s1) / dp
        out[k] = {"per_partition_calls": round(per_c, 2), "per_partition_ms": round(per_s * 1000, 1),
                  "per_table_calls": round(c1 - per_c * a["units"], 1),
                  "per_table_ms": round((s1 - per_s * a["units"]) * 1000, 1)}
    out["spark_jobs"] = {"per_partition_calls": round((b["jobs"] - a["jobs"]) / dp, 2),
                         "per_table_calls": round(a["jobs"] - (b["jobs"] - a["jobs"]) / dp * a["units"], 1)}
    out["wall"] = {"per_partition_ms": round((b["wall"] - a["wall"]) / dp * 1000, 1),
                   "per_table_ms": round((a["wall"] - (b["wall"] - a["wall"]) / dp * a["units"]) * 1000, 1)}
    return out


def render(fit: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    lines = ["runs: " + "; ".join(f"{r['table']}: {r['units']} partitions compacted in {r['wall']:.1f} s, "
                                  f"{r['jobs']} Spark jobs" for r in runs), ""]
    lines.append(f"{'what':42} {'calls/partition':>16} {'ms/partition':>13} {'calls/table':>12} {'ms/table':>10}")
    order = sorted(fit, key=lambda k: (k.split(".")[0] != "step", k.split(".")[0], -fit[k].get("per_partition_ms", 0)))
    for k in order:
        v = fit[k]
        lines.append(f"{k:42} {v.get('per_partition_calls', ''):>16} {v.get('per_partition_ms', ''):>13} "
                     f"{v.get('per_table_calls', ''):>12} {v.get('per_table_ms', ''):>10}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--partitions", default="10,40", help="P1,P2 (default %(default)s)")
    ap.add_argument("--files", type=int, default=4, help="small files per partition (default %(default)s)")
    ap.add_argument("--rows", type=int, default=200, help="rows per small file (default %(default)s)")
    ap.add_argument("--columns", type=int, default=2, help="columns of the tables (default %(default)s: id, v)")
    ap.add_argument("--parallelism", type=int, default=4, help="units at once (default %(default)s)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--testbed", help="a test bed's JSON (tests/testbed: scripts/testbed start)")
    ap.add_argument("--namenode-http",
                    help="HOST:PORT of the NameNode's web server, to count its RPCs (default: a Hadoop 3.5 bed's)")
    ap.add_argument("--state", default="/tmp/lakekeeper-unit-profile", help="embedded Metastore and data")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    p1, p2 = (int(x) for x in args.partitions.split(","))
    if os.path.isdir(args.state) and not args.testbed:
        import shutil

        shutil.rmtree(args.state)
    os.makedirs(args.state, exist_ok=True)
    spark, base = session(args, args.state)
    from lakekeeper_spark.storage.fs import HadoopFS

    fs = HadoopFS(spark)
    tables = [make_table(spark, fs, base, f"t{p}", p, args.files, args.rows, args.columns) for p in (p1, p2)]
    meter = Meter()
    instrument(meter)
    nn = namenode_http(args)
    runs = [profile_one(spark, meter, t, args.parallelism, nn) for t in tables]
    fit = slope(runs[0], runs[1])
    print(render(fit, runs))
    in_jobs, wall = fit.get("unit.in_jobs", {}).get("per_partition_ms"), fit["wall"]["per_partition_ms"]
    if in_jobs and wall > 0:
        fit["units_in_jobs"] = round(in_jobs / wall, 2)
        print(f"\nunits in their Spark jobs at once, on average: {fit['units_in_jobs']} of {args.parallelism}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"runs": runs, "fit": fit, "args": vars(args)}, f, indent=1)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
