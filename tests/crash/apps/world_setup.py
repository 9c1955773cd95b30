"""Creates every table of a crash-test world in ONE Spark process, and
records what each looks like (metastore locations, partitions, sha256 of
every file, owners and modes) in an expectation file.

    python world_setup.py SPEC.json EXPECT.json

SPEC (written by tests/crash/world.py):
    {"state_dir": "/x/state" | null (test bed: conf dirs in the environment),
     "master": "local[2]", "templates": URI, "tables": [TABLE, ...]}
TABLE:
    {"db", "name", "kind", "root": URI, "outside": URI|null, "precompact": bool,
     "append": [{"unit": SPEC, "template": N}], "backdate": bool, "fresh_units": [SPEC],
     "owner": {"user", "group", "dir_mode", "file_mode"} | null,
     "batch": URI | null (a merge batch, MERGE_BATCH, written there)}

Kinds: flat, part, outside, quiet (the crash and writer cases), merge (the
merge crash cases, with a batch) and bad:*
(bad input, see BAD_KINDS). Prints "RESULT {json}" (timings, what was created).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "..", "spark_app")))
sys.path.insert(0, HERE)

from world_common import (COLUMNS, DATA_TYPES, KINDS, LATE_ROWS, LATE_TEMPLATES, MERGE_BATCH,  # noqa: E402
                          MERGE_SELECT, MINOR_KEPT, MINOR_PROPERTIES, SELECT, kept_template_dir, local_fs_confs,
                          run_app, template_dir, units_of)

DAY_MS = 86400 * 1000
POOL = None  # a thread pool for file copies and hashes (set in main)


def local_path(uri):
    """The local path of a ``file:`` URI, None for any other (hdfs://: through Hadoop)."""
    return "/" + uri[len("file:"):].lstrip("/") if uri.startswith("file:") else None


class FS:
    """Small Hadoop FileSystem helper (py4j) for both file:// and hdfs://. What it only
    reads (listings, existence, contents) of a ``file:`` URI it reads from the local
    filesystem directly, as Hadoop's local filesystem shows it (the same entries, its
    checksum files ``.<name>.crc`` left out as ChecksumFileSystem's listing does, the same
    bytes), without a py4j call for each; what it writes goes through Hadoop (a copy gets
    its ``.crc`` file as a Spark-written file has)."""

    def __init__(self, spark):
        self.spark = spark
        self.jvm = spark._jvm
        self.conf = spark._jsc.hadoopConfiguration()
        # the classes once: py4j looks up every package of a dotted name on each use
        self._path = self.jvm.org.apache.hadoop.fs.Path
        self._io_utils = self.jvm.org.apache.commons.io.IOUtils

    def P(self, uri):
        return self._path(uri)

    def fs(self, uri):
        return self.P(uri).getFileSystem(self.conf)

    def exists(self, uri):
        path = local_path(uri)
        if path is not None:
            return os.path.exists(path)
        return bool(self.fs(uri).exists(self.P(uri)))

    def mkdirs(self, uri):
        self.fs(uri).mkdirs(self.P(uri))

    def delete(self, uri):
        self.fs(uri).delete(self.P(uri), True)

    def ls(self, uri):
        """(name, is a directory, status or None) of every entry of uri."""
        if not self.exists(uri):
            return []
        path = local_path(uri)
        if path is not None:
            with os.scandir(path) as entries:
                return [(e.name, e.is_dir(follow_symlinks=False), None) for e in entries
                        if not (e.name.startswith(".") and e.name.endswith(".crc"))]
        return [(str(st.getPath().getName()), bool(st.isDirectory()), st) for st in self.fs(uri).listStatus(self.P(uri))]

    def copy(self, src, dst):
        FileUtil = self.jvm.org.apache.hadoop.fs.FileUtil
        ok = FileUtil.copy(self.fs(src), self.P(src), self.fs(dst), self.P(dst), False, self.conf)
        if not ok:
            raise RuntimeError(f"copy {src} -> {dst} failed")

    def write_bytes(self, uri, data: bytes):
        out = self.fs(uri).create(self.P(uri), True)
        out.write(bytearray(data))
        out.close()

    def read_bytes(self, uri) -> bytes:
        path = local_path(uri)
        if path is not None:
            with open(path, "rb") as fh:
                return fh.read()
        stream = self.fs(uri).open(self.P(uri))
        try:
            return bytes(self._io_utils.toByteArray(stream))
        finally:
            stream.close()

    def sha(self, uri) -> str:
        return hashlib.sha256(self.read_bytes(uri)).hexdigest()

    def data_files(self, uri):
        return sorted(n for n, d, _size in self.ls(uri) if not d and not n.startswith((".", "_")))


def backdate(fs, uri, when):
    """Modification time of every file under uri (not the quiet period's business)."""
    try:
        entries = fs.ls(uri)
    except Exception:  # noqa: BLE001 - e.g. permission denied: leave it
        return
    for n, is_dir, _size in entries:
        if is_dir:
            backdate(fs, f"{uri}/{n}", when)
        else:
            fs.fs(uri).setTimes(fs.P(f"{uri}/{n}"), when, -1)


def make_templates(spark, fs, base, kinds):
    """Parquet files per (kind, unit) of the ``kinds`` used, with distinct
    ids, and LATE_TEMPLATES single-file templates of LATE_ROWS rows for
    late/appended files."""
    made = 0
    for kind, units in KINDS.items():
        if kind not in kinds:
            continue
        for spec, (lo, hi, files) in units.items():
            d = template_dir(base, kind, spec)
            if fs.exists(d):
                continue
            spark.range(lo, hi, 1, files).selectExpr(*SELECT).write.parquet(d)
            made += 1
    kept = kept_template_dir(base)
    if "minor" in kinds and not fs.exists(kept):
        lo, hi, files = MINOR_KEPT
        spark.range(lo, hi, 1, files).selectExpr(*SELECT).write.parquet(kept)
        made += 1
    late = f"{base}/late"
    if not fs.exists(late):
        n = LATE_TEMPLATES * LATE_ROWS
        spark.range(0, n, 1, LATE_TEMPLATES).selectExpr("id + 1000000 AS id", *SELECT[1:]).write.parquet(late)
        made += 1
    names = fs.data_files(late)
    assert len(names) == LATE_TEMPLATES, names
    odd = f"{base}/odd_schema"
    if not fs.exists(odd):
        spark.range(0, 5, 1, 1).selectExpr("CAST(id AS STRING) AS id", "'x' AS name").write.parquet(odd)
    return made, [f"{late}/{n}" for n in names]


def ddl_columns(kind):
    return ", ".join(f"{c} {t}" for c, t in zip(COLUMNS, DATA_TYPES))


def partition_clause(spec):
    parts = [kv.split("=", 1) for kv in spec.split("/")]
    return "PARTITION (" + ", ".join(f"{k}='{v}'" for k, v in parts) + ")"


def create_table(spark, fs, t, templates):
    """A table of one of KINDS: DDL, files copied from the templates, partitions added."""
    db, name, kind = t["db"], t["name"], t["kind"]
    full = f"{db}.{name}"
    layout = units_of(kind, t["root"], t.get("outside"))
    part_cols = layout["partition_columns"]
    part_sql = f"PARTITIONED BY ({', '.join(f'{c} STRING' for c in part_cols)})" if part_cols else ""
    props = ""
    if kind == "minor":
        props = " TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in MINOR_PROPERTIES.items()) + ")"
    spark.sql(f"CREATE EXTERNAL TABLE {full} ({ddl_columns(kind)}) {part_sql} STORED AS PARQUET "
              f"LOCATION '{t['root']}'{props}")
    jobs = []
    for spec, loc in layout["units"].items():
        src = template_dir(templates, kind, spec)
        fs.mkdirs(loc)
        jobs += [(f"{src}/{n}", f"{loc}/{n}") for n in fs.data_files(src)]
        if kind == "minor":
            kept = kept_template_dir(templates)
            jobs += [(f"{kept}/{n}", f"{loc}/kept-{n}") for n in fs.data_files(kept)]
    list(POOL.map(lambda j: fs.copy(*j), jobs))
    if part_cols:
        clauses = " ".join(f"{partition_clause(spec)} LOCATION '{loc}'" for spec, loc in layout["units"].items())
        spark.sql(f"ALTER TABLE {full} ADD {clauses}")
    return layout


def write_batch(spark, uri):
    """The merge batch (MERGE_BATCH): a flat directory of a few Parquet files."""
    from functools import reduce

    parts = [spark.range(lo, hi, 1, 1).selectExpr("id", f"{MERGE_SELECT[what][0]} AS name",
                                                  "CAST(id * 1.5 AS DECIMAL(12,2)) AS amount",
                                                  f"{MERGE_SELECT[what][1]} AS ts",
                                                  f"'{spec.split('=', 1)[1]}' AS dt")
             for lo, hi, what, spec in MERGE_BATCH]
    reduce(lambda a, b: a.unionByName(b), parts).repartition(3).write.parquet(uri)


# ------------------------------------------------------------------ bad input

def create_bad(spark, fs, t, templates, late):
    """Bad-input cases: tables the engine must refuse, skip or fail on
    without changing anything. Returns a note of what was created."""
    db, name, kind, root = t["db"], t["name"], t["kind"], t["root"]
    full = f"{db}.{name}"
    variant = kind.split(":", 1)[1]
    cols = ddl_columns("flat")
    flat_src = template_dir(templates, "flat", "")

    def flat_table(location=root, extra=""):
        spark.sql(f"CREATE EXTERNAL TABLE {full} ({cols}) {extra} STORED AS PARQUET LOCATION '{location}'")
        fs.mkdirs(location)
        for n in fs.data_files(flat_src):
            fs.copy(f"{flat_src}/{n}", f"{location}/{n}")

    note = ""
    if variant == "view":
        spark.sql(f"CREATE VIEW {full} AS SELECT 1 AS one")
    elif variant == "managed":
        spark.sql(f"CREATE TABLE {full} (id BIGINT) STORED AS PARQUET")
        spark.range(0, 100, 1, 10).createOrReplaceTempView("lk_bad_src")
        spark.sql(f"INSERT INTO {full} SELECT id FROM lk_bad_src")
    elif variant == "acid":
        try:
            spark.sql(f"CREATE TABLE {full} (id BIGINT) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
                      f"TBLPROPERTIES ('transactional'='true')")
            note = "managed ORC, transactional=true"
        except Exception as exc:  # the Metastore may refuse it; then the insert-only marker
            spark.sql(f"DROP TABLE IF EXISTS {full}")
            flat_table()
            spark.sql(f"ALTER TABLE {full} SET TBLPROPERTIES ('transactional_properties'='insert_only')")
            note = f"external parquet with transactional_properties=insert_only ({str(exc).splitlines()[0][:120]})"
    elif variant == "bucketed":
        flat_table(extra="CLUSTERED BY (id) INTO 4 BUCKETS")
    elif variant == "sequencefile":
        spark.sql(f"CREATE EXTERNAL TABLE {full} (id BIGINT, name STRING) STORED AS SEQUENCEFILE LOCATION '{root}'")
        fs.mkdirs(root)
        for i in range(3):
            fs.write_bytes(f"{root}/f{i}", b"SEQ\x06not-really")
    elif variant == "json_datasource":
        fs.mkdirs(root)
        for i in range(5):
            fs.write_bytes(f"{root}/part-{i}.json", json.dumps({"id": i}).encode() + b"\n")
        spark.sql(f"CREATE TABLE {full} (id BIGINT) USING json LOCATION '{root}'")
    elif variant == "missing_partition_dir":
        spark.sql(f"CREATE EXTERNAL TABLE {full} ({cols}) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                  f"LOCATION '{root}'")
        for spec in ("gone", "one"):
            fs.mkdirs(f"{root}/dt={spec}")
        for n in fs.data_files(flat_src)[:1]:
            fs.copy(f"{flat_src}/{n}", f"{root}/dt=one/{n}")
        spark.sql(f"ALTER TABLE {full} ADD PARTITION (dt='gone') LOCATION '{root}/dt=gone' "
                  f"PARTITION (dt='one') LOCATION '{root}/dt=one'")
        fs.delete(f"{root}/dt=gone")
    elif variant == "missing_table_dir":
        flat_table()
        fs.delete(root)
    elif variant in ("text_file_first", "text_file_last"):
        flat_table()
        fname = "00-notes.txt" if variant == "text_file_first" else "zz-notes.txt"
        fs.write_bytes(f"{root}/{fname}", b"this is not parquet\n" * 20)
    elif variant == "corrupt_parquet":
        flat_table()
        fs.write_bytes(f"{root}/part-99999-corrupt.snappy.parquet", b"PAR1" + os.urandom(3000) + b"PAR1")
    elif variant == "truncated_parquet":
        flat_table()
        first = fs.data_files(root)[0]
        data = fs.read_bytes(f"{root}/{first}")
        fs.write_bytes(f"{root}/part-99998-truncated.snappy.parquet", data[: len(data) // 2])
    elif variant == "empty_file":
        flat_table()
        fs.write_bytes(f"{root}/part-99997-empty.snappy.parquet", b"")
    elif variant == "schema_mismatch":
        flat_table()
        odd = f"{templates}/odd_schema"
        n = fs.data_files(odd)[0]
        fs.copy(f"{odd}/{n}", f"{root}/part-99996-oddschema.snappy.parquet")
    elif variant == "hidden_partition_column":
        spark.sql(f"CREATE EXTERNAL TABLE {full} ({cols}) PARTITIONED BY (_p STRING) STORED AS PARQUET "
                  f"LOCATION '{root}'")
        fs.mkdirs(f"{root}/_p=x")
        for n in fs.data_files(flat_src):
            fs.copy(f"{flat_src}/{n}", f"{root}/_p=x/{n}")
        spark.sql(f"ALTER TABLE {full} ADD PARTITION (_p='x') LOCATION '{root}/_p=x'")
    elif variant == "nested_subdirectory":
        flat_table()
        fs.mkdirs(f"{root}/sub")
        n = fs.data_files(root)[0]
        fs.copy(f"{root}/{n}", f"{root}/sub/{n}")
    elif variant == "quote_in_location":
        loc = root + "/we'ird"
        t["root"] = loc
        escaped = loc.replace("'", "\\'")
        spark.sql(f"CREATE EXTERNAL TABLE {full} ({cols}) STORED AS PARQUET LOCATION '{escaped}'")
        fs.mkdirs(loc)
        for n in fs.data_files(flat_src):
            fs.copy(f"{flat_src}/{n}", f"{loc}/{n}")
    elif variant == "unreachable_filesystem":
        flat_table()
        # Spark refreshes (lists) the new location of a converted parquet table; a Hive serde one it does not
        spark.conf.set("spark.sql.hive.convertMetastoreParquet", "false")
        try:
            spark.sql(f"ALTER TABLE {full} SET LOCATION 'hdfs://127.0.0.1:1/lakekeeper/nowhere'")
        finally:
            spark.conf.unset("spark.sql.hive.convertMetastoreParquet")
        note = "location hdfs://127.0.0.1:1/... (nothing listens there)"
    elif variant == "permission_denied":
        flat_table()
        chown_tree(fs, root, "alice", "alice", 0o700, 0o600)
        note = "owned by alice:alice, mode 700/600"
    elif variant == "quota":
        # several HDFS blocks of incompressible data, in a directory of its own
        parent = root.rsplit("/", 1)[0]
        spark.sql(f"CREATE EXTERNAL TABLE {full} ({cols}) STORED AS PARQUET LOCATION '{root}'")
        spark.range(0, 40000, 1, 8).selectExpr(
            "id", "sha2(CAST(id AS STRING), 512) AS name", "CAST(id * 1.5 AS DECIMAL(12,2)) AS amount",
            "timestamp_seconds(1700000000 + id) AS ts").write.mode("append").parquet(root)
        chown_tree(fs, parent, "bob", "bob", 0o755, 0o644)
        note = "owned by bob, ~4 MB in 8 files"
    else:
        raise ValueError(f"unknown bad-input variant {variant}")
    return note


# ------------------------------------------------------------------ snapshots

def tree(fs, uri):
    """Every entry under uri (hidden included): rel path -> sha256 | 'dir'."""
    out = {}
    if not fs.exists(uri):
        return out

    def walk(u, rel):
        for n, is_dir, _size in fs.ls(u):
            r = f"{rel}/{n}" if rel else n
            if is_dir:
                out[r] = "dir"
                walk(f"{u}/{n}", r)
            elif not n.endswith(".crc"):
                out[r] = fs.sha(f"{u}/{n}")
    walk(uri, "")
    return out


def chown_tree(fs, uri, user, group, dir_mode, file_mode):
    FsPermission = fs.jvm.org.apache.hadoop.fs.permission.FsPermission
    f = fs.fs(uri)
    f.setOwner(fs.P(uri), user, group)
    f.setPermission(fs.P(uri), FsPermission(format(dir_mode, "o")))
    for n, is_dir, _size in fs.ls(uri):
        if is_dir:
            chown_tree(fs, f"{uri}/{n}", user, group, dir_mode, file_mode)
        else:
            f.setOwner(fs.P(f"{uri}/{n}"), user, group)
            f.setPermission(fs.P(f"{uri}/{n}"), FsPermission(format(file_mode, "o")))


def perms(fs, uri):
    st = fs.fs(uri).getFileStatus(fs.P(uri))
    return [str(st.getOwner()), str(st.getGroup()), int(st.getPermission().toShort()) & 0o7777]


def unit_files(fs, t):
    """The original files of every unit (before any compaction by setup)."""
    if t["kind"] not in KINDS:
        return {}
    layout = units_of(t["kind"], t["root"], t.get("outside"))
    out = {}
    for spec, loc in layout["units"].items():
        names = fs.data_files(loc)
        digests = POOL.map(lambda n, loc=loc: fs.sha(f"{loc}/{n}"), names)
        out[spec] = {"location": loc, "files": dict(zip(names, digests))}
    return out


def snapshot(spark, fs, catalog, t, originals):
    db, name = t["db"], t["name"]
    full = f"{db}.{name}"
    out = {"table": full, "kind": t["kind"]}
    try:
        info = catalog.get_table(db, name)
    except Exception as exc:  # noqa: BLE001
        out["error"] = str(exc)[:300]
        return out
    out["table_type"] = info.table_type
    out["location"] = info.location
    if info.partition_columns:
        out["partitions"] = {p.spec_str: p.location for p in catalog.list_partitions(info)}
        out["show_partitions"] = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {full}").collect())
    else:
        out["partitions"] = None
    roots = [t["root"]] + ([t["outside"]] if t.get("outside") else [])
    out["trees"] = {r: tree(fs, r) for r in roots}
    units = originals
    for spec, u in units.items():
        if t.get("owner"):
            first = sorted(u["files"])[0]
            u["dir_perms"] = perms(fs, u["location"])
            u["file_perms"] = perms(fs, f"{u['location']}/{first}")
    out["units"] = units
    if t["kind"] == "bad:quota":
        parent = t["root"].rsplit("/", 1)[0]
        out["quota"] = {"consumed": int(fs.fs(parent).getContentSummary(fs.P(parent)).getSpaceConsumed())}
    return out


def set_owner(fs, t):
    o = t["owner"]
    layout = units_of(t["kind"], t["root"], t.get("outside"))
    FsPermission = fs.jvm.org.apache.hadoop.fs.permission.FsPermission
    for _spec, loc in layout["units"].items():
        f = fs.fs(loc)
        f.setOwner(fs.P(loc), o["user"], o["group"])
        f.setPermission(fs.P(loc), FsPermission(format(o["dir_mode"], "o")))
        for n in fs.data_files(loc):
            p = fs.P(f"{loc}/{n}")
            f.setOwner(p, o["user"], o["group"])
            f.setPermission(p, FsPermission(format(o["file_mode"], "o")))


def main():
    spec_path, expect_path = sys.argv[1], sys.argv[2]
    spec = json.load(open(spec_path))
    t0 = time.time()
    timings = {}
    from lakekeeper_spark.session import build_session

    spark = build_session(spec.get("master", "local[2]"), spec.get("state_dir"),
                          {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                           **local_fs_confs(), **spec.get("confs", {})})
    timings["session"] = round(time.time() - t0, 1)
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.cli import _run_tables
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id

    global POOL  # pylint: disable=global-statement
    from concurrent.futures import ThreadPoolExecutor

    POOL = ThreadPoolExecutor(max_workers=8)
    fs = FS(spark)
    catalog = Catalog(spark)
    t1 = time.time()
    kinds = {"flat"} | {t["kind"] for t in spec["tables"]}  # (bad input copies the flat template)
    made, late = make_templates(spark, fs, spec["templates"], kinds)
    timings["templates"] = round(time.time() - t1, 1)
    notes = {}
    t1 = time.time()
    for db in dict.fromkeys(t["db"] for t in spec["tables"]):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    first_batch = None  # every table's batch has the same rows: written once by Spark, then copied file by file
    for t in spec["tables"]:
        if t["kind"].startswith("bad:"):
            try:
                notes[f"{t['db']}.{t['name']}"] = create_bad(spark, fs, t, spec["templates"], late)
            except Exception as exc:  # noqa: BLE001 - one case that cannot be made must not sink the others
                notes[f"{t['db']}.{t['name']}"] = "NOT CREATED: " + str(exc).splitlines()[0][:200]
                t["not_created"] = True
                spark.sql(f"DROP TABLE IF EXISTS {t['db']}.{t['name']}")
        else:
            create_table(spark, fs, t, spec["templates"])
        if t.get("batch"):
            if first_batch:
                fs.copy(first_batch, t["batch"])
            else:
                write_batch(spark, t["batch"])
                first_batch = t["batch"]
    timings["tables"] = round(time.time() - t1, 1)
    originals = {f"{t['db']}.{t['name']}": unit_files(fs, t) for t in spec["tables"]}

    t1 = time.time()
    pre = [f"{t['db']}.{t['name']}" for t in spec["tables"] if t.get("precompact")]
    precompacted = {}
    if pre:
        ctx = Context(spark, HadoopFS(spark), catalog, build_settings({}, {}), new_run_id())
        for res in _run_tables(ctx, "compact", pre, None):
            precompacted[res["table"]] = res["status"]
            assert res["status"] == "compacted", res
    timings["precompact"] = round(time.time() - t1, 1)

    appended = {}
    for t in spec["tables"]:
        if not t.get("append"):
            continue
        layout = units_of(t["kind"], t["root"], t.get("outside"))
        for a in t["append"]:
            dst = f"{layout['units'][a['unit']]}/appended-{a['template']}.parquet"
            fs.copy(late[a["template"]], dst)
            appended.setdefault(f"{t['db']}.{t['name']}", []).append(dict(a, path=dst))
    appended_to_old = {}
    for t in spec["tables"]:
        for a in t.get("append_to_old") or []:
            # a file a writer closed in the moved-aside original after the swap
            loc = units_of(t["kind"], t["root"], t.get("outside"))["units"][a["unit"]]
            parent, base = loc.rstrip("/").rsplit("/", 1)
            old = [n for n, d, _size in fs.ls(parent) if d and n.startswith(f".{base}.lk_old_")]
            assert len(old) == 1, old
            dst = f"{parent}/{old[0]}/late-in-old-{a['template']}.parquet"
            fs.copy(late[a["template"]], dst)
            appended_to_old.setdefault(f"{t['db']}.{t['name']}", []).append(dict(a, path=dst))
    for t in spec["tables"]:
        if t.get("owner"):
            set_owner(fs, t)
    now = int(time.time() * 1000)
    for t in spec["tables"]:
        if not t.get("backdate"):
            continue
        if t["kind"] in KINDS:
            layout = units_of(t["kind"], t["root"], t.get("outside"))
            dirs = [loc for spec_, loc in layout["units"].items() if spec_ not in (t.get("fresh_units") or [])]
        else:
            dirs = [t["root"]]
        for d in dirs:
            backdate(fs, d, now - DAY_MS)
    t1 = time.time()
    expect = {"tables": {}, "late_templates": late, "appended": appended, "appended_to_old": appended_to_old,
              "notes": notes,
              "precompacted": precompacted}
    for t in spec["tables"]:
        full = f"{t['db']}.{t['name']}"
        expect["tables"][full] = dict(snapshot(spark, fs, catalog, t, originals[full]), spec=t)
    timings["snapshot"] = round(time.time() - t1, 1)
    with open(expect_path, "w") as fh:
        json.dump(expect, fh, indent=1, sort_keys=True)
    timings["total"] = round(time.time() - t0, 1)
    spark.stop()
    print("RESULT " + json.dumps({"timings": timings, "templates_made": made, "notes": notes}), flush=True)


if __name__ == "__main__":
    run_app(main)
