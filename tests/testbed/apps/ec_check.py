"""What test_erasure_coding.py checks after the engine's runs, from a
separate Spark process (plain python, local, through the Metastore and the
engine's own FileSystem adapter): per table the rows (count, sum) and each
partition directory's policy and its files' policies (for ``tiered``
also their storage policies and the space consumed); the journal
directories (their policy, their files' policies, each run's records as
Journal.load reads them); with ``probe``, what an append log does in an
erasure coded directory and in one given the replication policy (a second
client reads what was synced before the writer closes). Prints RESULT
<json>."""

import json
import sys

sys.path.insert(0, sys.argv[1])
from pyspark.sql import SparkSession  # noqa: E402

from lakekeeper_spark.protocol.journal import Journal  # noqa: E402  pylint: disable=import-error
from lakekeeper_spark.storage.fs import HadoopFS  # noqa: E402  pylint: disable=import-error

db, root, probe = sys.argv[2], sys.argv[3], sys.argv[4] == "probe"
spark = SparkSession.builder.master("local[1]").enableHiveSupport().getOrCreate()
fs = HadoopFS(spark)
base = fs.qualify(root)
out = {}
for t in ("part_ec", "table_ec", "wrong", "disabled", "crash", "tiered"):
    spark.sql(f"REFRESH TABLE {db}.{t}")
    r = spark.sql(f"SELECT count(*) n, sum(id) s FROM {db}.{t}").first()
    parts = {}
    for name, is_dir in fs.list_names(f"{base}/{t}"):
        if is_dir and name.startswith("dt="):
            d = f"{base}/{t}/{name}"
            parts[name] = {"dir": fs.erasure_coding_policy(d),
                           "files": [fs.erasure_coding_policy(f"{d}/{f.name}") for f in fs.list_dir(d).files]}
            if t == "tiered":  # tiering: the storage policy of the directory and its files, the space consumed
                parts[name]["storage"] = fs.storage_policy_of(d)
                parts[name]["file_storage"] = [fs.storage_policy_of(f"{d}/{f.name}") for f in fs.list_dir(d).files]
                parts[name]["space"] = fs.content_summary(d)["space_consumed"]
    jdir = f"{base}/{t}/.lakekeeper"
    journal = {"exists": fs.exists(jdir)}
    if journal["exists"]:
        journal["dir"] = fs.erasure_coding_policy(jdir)
        runs = Journal.run_ids(fs, jdir)
        journal["runs"] = {}
        for run in runs:
            doc, units = Journal.load(fs, jdir, run)
            names = [n for n, is_dir in fs.list_names(f"{jdir}/{run}") if not is_dir]
            journal["runs"][run] = {"step": doc.get("step"), "units": {i: u.get("step") for i, u in units.items()},
                                    "files": {n: fs.erasure_coding_policy(f"{jdir}/{run}/{n}") for n in names}}
    out[t] = {"rows": r.n, "sum": r.s, "parts": parts, "journal": journal}

if probe:  # an append log, as the journal's unit records use it
    def appended(d: str) -> dict:
        fs.mkdirs(d)
        log = fs.open_log(f"{d}/units-0.jsonl")
        if log is None:  # the adapter found the stream cannot be synced (and removed the file)
            return {"open_log": None}
        log.append('{"step": "written"}\n')
        reader = fs.fs(d).newInstance(fs.fs(d).getUri(), fs.hdfs_conf())  # another client, as after a crash
        stream = reader.open(fs.path(f"{d}/units-0.jsonl"))
        seen = bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)).decode()  # pylint: disable=protected-access
        stream.close()
        reader.close()
        log.close()
        return {"open_log": "opened", "seen_before_close": seen, "policy": fs.erasure_coding_policy(f"{d}/units-0.jsonl")}

    ec_dir = f"{base}/probe/ec"
    fs.delete(f"{base}/probe")
    fs.mkdirs(ec_dir)
    fs.set_erasure_coding_policy(ec_dir, "XOR-2-1-1024k")
    out["probe"] = {"ec": appended(f"{ec_dir}/j1")}
    fs.mkdirs(f"{ec_dir}/j2")
    out["probe"]["replicate_new_files"] = fs.replicate_new_files(f"{ec_dir}/j2")
    out["probe"]["replicated"] = appended(f"{ec_dir}/j2")
    out["probe"]["replicate_again"] = fs.replicate_new_files(f"{ec_dir}/j2")
print("RESULT " + json.dumps(out, sort_keys=True, default=str))
