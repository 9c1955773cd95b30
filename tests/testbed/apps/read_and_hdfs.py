"""Smoke app (b)+(c): a second, separate Spark process (plain python, local
master) configured only by HADOOP_CONF_DIR/SPARK_CONF_DIR from the test bed.

(b) reads the table written by write_table.py through the Metastore service;
(c) checks HDFS rename semantics, a space quota, ACLs and chown through the
    Hadoop FileSystem API in this JVM;
(d) erasure coding, the storage policy of a path and the enclosing root of a
    path: Hadoop 3 NameNodes answer them, Hadoop 2.7 answers "Unknown method".
Prints one line "RESULT {json}"; each section reports its own error so one
failure does not hide the others.

    python read_and_hdfs.py DB TABLE HDFS_BASE_DIR
"""
import json
import os
import sys
import traceback

from pyspark.sql import SparkSession

LONG_MAX = 2 ** 63 - 1  # HdfsConstants.QUOTA_DONT_SET


def table_section(spark, name):
    row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s, count(DISTINCT name) AS d FROM {name}").collect()[0]
    loc = [r["data_type"] for r in spark.sql(f"DESCRIBE FORMATTED {name}").collect()
           if r["col_name"] == "Location"]
    return {"table_type": spark.catalog.getTable(name).tableType, "count": row["n"], "sum": row["s"],
            "distinct_names": row["d"], "location": loc[0] if loc else None,
            "tables_in_db": sorted(t.name for t in spark.catalog.listTables(name.split(".")[0]))}


def hdfs_section(spark, base):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    Path = jvm.org.apache.hadoop.fs.Path
    fs = Path(base).getFileSystem(conf)
    out = {"fs_class": fs.getClass().getName(), "fs_uri": fs.getUri().toString(),
           "default_block_size": fs.getDefaultBlockSize(Path(base))}

    def touch(p, data=b"x"):
        s = fs.create(Path(p))
        s.write(bytearray(data))
        s.close()

    # rename a directory onto an existing directory: HDFS moves it inside
    fs.mkdirs(Path(f"{base}/onto/src"))
    touch(f"{base}/onto/src/f")
    fs.mkdirs(Path(f"{base}/onto/dst"))
    out["rename_dir_onto_dir"] = fs.rename(Path(f"{base}/onto/src"), Path(f"{base}/onto/dst"))
    out["moved_inside"] = fs.exists(Path(f"{base}/onto/dst/src/f"))
    out["src_gone"] = not fs.exists(Path(f"{base}/onto/src"))
    # rename into a missing parent: false, source untouched
    fs.mkdirs(Path(f"{base}/np/a"))
    out["rename_missing_parent"] = fs.rename(Path(f"{base}/np/a"), Path(f"{base}/np/missing/b"))
    out["missing_parent_src_kept"] = fs.exists(Path(f"{base}/np/a"))
    out["missing_parent_not_created"] = not fs.exists(Path(f"{base}/np/missing"))
    # source missing: false, no exception
    out["rename_source_missing"] = fs.rename(Path(f"{base}/nope"), Path(f"{base}/x"))
    # file onto an existing file: false
    touch(f"{base}/ff/f1", b"1")
    touch(f"{base}/ff/f2", b"2")
    out["rename_file_onto_file"] = fs.rename(Path(f"{base}/ff/f1"), Path(f"{base}/ff/f2"))

    # space quota: 1.5 blocks; a file of 3 blocks must fail with DSQuotaExceededException
    bs = out["default_block_size"]
    q = f"{base}/quota"
    fs.mkdirs(Path(q))
    quota = bs + bs // 2
    fs.setQuota(Path(q), LONG_MAX, quota)
    out["space_quota"] = fs.getContentSummary(Path(q)).getSpaceQuota()
    out["quota_wanted"] = quota
    touch(f"{q}/small", b"s" * 1000)
    out["small_write_ok"] = fs.exists(Path(f"{q}/small"))
    try:
        s = fs.create(Path(f"{q}/big"))
        chunk = bytearray(bs)
        for _block in range(3):
            s.write(chunk)
        s.close()
        out["big_write_error"] = None
    except Exception as e:  # py4j.protocol.Py4JJavaError
        text = str(e)
        out["big_write_error"] = ("DSQuotaExceededException" if "DSQuotaExceededException" in text
                                  else text[:2000])

    # ACLs are enabled, and the superuser may chown
    acl_dir = Path(f"{base}/acl")
    fs.mkdirs(acl_dir)
    fs.modifyAclEntries(acl_dir, jvm.org.apache.hadoop.fs.permission.AclEntry.parseAclSpec("user:nobody:r-x", True))
    out["acl_entries"] = [str(e) for e in fs.getAclStatus(acl_dir).getEntries()]
    fs.setOwner(acl_dir, "nobody", "nogroup")
    st = fs.getFileStatus(acl_dir)
    out["owner_after_chown"] = f"{st.getOwner()}:{st.getGroup()}"
    return out


def _unknown(fn):
    """fn()'s value, or {"error": ...}: a 2.7 NameNode's "Unknown method" (RpcNoSuchMethodException)."""
    try:
        return fn()
    except Exception as e:  # py4j.protocol.Py4JJavaError
        text = str(e)
        return {"error": "Unknown method" if "Unknown method" in text else text[:2000]}


def hadoop3_section(spark, base):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    Path = jvm.org.apache.hadoop.fs.Path
    fs = Path(base).getFileSystem(conf)
    d = Path(f"{base}/ec")
    fs.mkdirs(d)
    out = {"policies": _unknown(lambda: sorted(f"{p.getPolicy().getName()}:{p.getState().toString()}"
                                               for p in fs.getAllErasureCodingPolicies())),
           "storage_policy": _unknown(lambda: fs.getStoragePolicy(d).getName()),
           "enclosing_root": _unknown(lambda: fs.getEnclosingRoot(d).toUri().getPath())}
    out["set_ec"] = _unknown(lambda: fs.setErasureCodingPolicy(d, "XOR-2-1-1024k"))
    out["dir_ec"] = _unknown(lambda: str(fs.getErasureCodingPolicy(d).getName()))
    if "error" not in out["dir_ec"]:
        # 2.5 cells of 1 MiB: striped over both data blocks, with the parity block on a third DataNode
        data = bytearray((i * 7) % 251 for i in range(5 * 512 * 1024))
        s = fs.create(Path(f"{base}/ec/f"))
        s.write(data)
        s.close()
        st = fs.getFileStatus(Path(f"{base}/ec/f"))
        i = fs.open(Path(f"{base}/ec/f"))
        back = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(i))  # byte[] comes back as bytes
        i.close()
        locs = fs.getFileBlockLocations(st, 0, st.getLen())
        out.update({"file_ec": st.isErasureCoded(), "file_len": st.getLen(), "read_back_equal": back == data,
                    "block_hosts": sorted({str(n) for b in locs for n in b.getNames()})})
    return out


def main():
    db, table, base = sys.argv[1], sys.argv[2], sys.argv[3]
    # No master/catalog settings here on purpose: they come from SPARK_CONF_DIR.
    spark = SparkSession.builder.master("local[1]").appName("testbed-smoke-read").getOrCreate()
    out = {"pid": os.getpid(), "catalog": spark.conf.get("spark.sql.catalogImplementation"),
           "default_fs": spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS")}
    for key, fn, arg in (("table", table_section, f"{db}.{table}"), ("hdfs", hdfs_section, base),
                         ("hadoop3", hadoop3_section, base)):
        try:
            out[key] = fn(spark, arg)
        except Exception:
            out[key] = {"error": traceback.format_exc()[-3000:]}
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
