"""Erasure coded tables as a real cluster gets them (test_erasure_coding.py),
under spark-submit: partitioned EXTERNAL Parquet tables through the
Metastore; an admin gives a directory its policy (setErasureCodingPolicy)
before data lands; Spark writes the files (INSERT INTO a partition, or an
ingest job writing into a partition's directory that is then added); a
table with a tiering policy (``lakekeeper.tier.*``) whose partitions an
ingest job wrote 90 days ago and yesterday.
Prints RESULT {table: {"rows", "sum", "files": {partition: [policy of
each file]}}}."""

import json
import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.enableHiveSupport().getOrCreate()
db, root = sys.argv[1], sys.argv[2]
jvm = spark._jvm  # pylint: disable=protected-access
fs = jvm.org.apache.hadoop.fs.FileSystem.get(spark._jsc.hadoopConfiguration())  # pylint: disable=protected-access
Path = jvm.org.apache.hadoop.fs.Path
XOR = "XOR-2-1-1024k"
spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
fs.delete(Path(root), True)  # an external table's files outlive DROP TABLE: start clean
spark.sql(f"CREATE DATABASE {db}")
ROWS = 4000


def rows(lo):
    return spark.range(lo, lo + ROWS).selectExpr("id", "cast(id as string) v").repartition(12)


def table(name, policy=None):
    if policy:  # the admin's: the table's directory erasure coded before anything lands in it
        fs.mkdirs(Path(f"{root}/{name}"))
        fs.setErasureCodingPolicy(Path(f"{root}/{name}"), policy)
    spark.sql(f"CREATE EXTERNAL TABLE {db}.{name} (id BIGINT, v STRING) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{root}/{name}'")


def insert(name, dt, lo):
    rows(lo).createOrReplaceTempView("src")
    spark.sql(f"INSERT INTO {db}.{name} PARTITION (dt='{dt}') SELECT * FROM src")


def landed(name, dt, lo, policy=None):
    """The admin makes the partition's directory and gives it ``policy``,
    an ingest job writes its files there, the partition is added."""
    d = f"{root}/{name}/dt={dt}"
    fs.mkdirs(Path(d))
    if policy:
        fs.setErasureCodingPolicy(Path(d), policy)
    rows(lo).write.mode("append").parquet(d)
    spark.sql(f"ALTER TABLE {db}.{name} ADD PARTITION (dt='{dt}') LOCATION '{d}'")


# a replicated table, one partition erasure coded
table("part_ec")
insert("part_ec", "1", 0)
landed("part_ec", "2", ROWS, XOR)
# an erasure coded table (its partitions and its journal directory inherit), one partition replicated
table("table_ec", XOR)
insert("table_ec", "1", 0)
insert("table_ec", "2", ROWS)
landed("table_ec", "3", 2 * ROWS, "replication")
# as part_ec: its compaction is given the wrong policy (fault hook): verification must fail
table("wrong")
landed("wrong", "2", 0, XOR)
# a partition whose policy is no longer enabled: refused
table("disabled")
insert("disabled", "1", 0)
landed("disabled", "2", ROWS)
fs.enableErasureCodingPolicy("RS-3-2-1024k")
fs.setErasureCodingPolicy(Path(f"{root}/disabled/dt=2"), "RS-3-2-1024k")  # files keep theirs: replicated
fs.disableErasureCodingPolicy("RS-3-2-1024k")
# tiering (lakekeeper.tier.*): a replicated table an ingest job fills (replication 3, a real cluster's default)
# every day; its partition of 90 days ago is old enough (its files' times as they were written then), the one
# of yesterday is not
DAY_MS = 86400 * 1000


def aged(name, dt, lo, days):
    """An ingest job writes the partition's files; they get replication 3, as on a cluster whose dfs.replication
    is 3 (this bed's clients write 1), and their times are set back ``days`` days, as a partition written then
    has them."""
    landed(name, dt, lo)
    then = int(spark._jvm.System.currentTimeMillis()) - days * DAY_MS  # pylint: disable=protected-access
    d = Path(f"{root}/{name}/dt={dt}")
    for st in fs.listStatus(d):
        fs.setReplication(st.getPath(), 3)
        fs.setTimes(st.getPath(), then, then)


table("tiered")
aged("tiered", "2026-08-31", 0, 90)
aged("tiered", "2026-11-28", ROWS, 1)
spark.sql(f"ALTER TABLE {db}.tiered SET TBLPROPERTIES ('lakekeeper.tier.older_than'='30d', "
          f"'lakekeeper.tier.storage_policy'='ALL_SSD', 'lakekeeper.tier.erasure_coding_policy'='{XOR}')")
# a tiering policy this NameNode does not have: the table refused before anything is written
table("tier_bad")
aged("tier_bad", "2026-08-31", 0, 90)
spark.sql(f"ALTER TABLE {db}.tier_bad SET TBLPROPERTIES ('lakekeeper.tier.older_than'='30d', "
          f"'lakekeeper.tier.storage_policy'='FROZEN')")
# an erasure coded table whose compaction is killed: its journal must be readable
table("crash", XOR)
insert("crash", "1", 0)
insert("crash", "2", ROWS)

out = {}
for t in ("part_ec", "table_ec", "wrong", "disabled", "crash", "tiered", "tier_bad"):
    r = spark.sql(f"SELECT count(*) n, sum(id) s FROM {db}.{t}").first()
    files = {}
    for st in fs.listStatus(Path(f"{root}/{t}")):
        name = st.getPath().getName()
        if name.startswith("dt="):
            pols = [fs.getErasureCodingPolicy(f.getPath()) for f in fs.listStatus(st.getPath())
                    if not f.getPath().getName().startswith(("_", "."))]
            files[name] = [p.getName() if p is not None else None for p in pols]
    out[t] = {"rows": r.n, "sum": r.s, "files": files}
    if t == "tiered":  # each partition's storage policy and space consumed before the compaction
        out[t]["storage"] = {n: fs.getStoragePolicy(Path(f"{root}/{t}/{n}")).getName() for n in files}
        out[t]["space"] = {n: fs.getContentSummary(Path(f"{root}/{t}/{n}")).getSpaceConsumed() for n in files}
        out[t]["replication"] = {n: sorted({f.getReplication() for f in fs.listStatus(Path(f"{root}/{t}/{n}"))})
                                 for n in files}
print("RESULT " + json.dumps(out, sort_keys=True))
