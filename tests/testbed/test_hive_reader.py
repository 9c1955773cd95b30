"""Hive reads what we wrote (issue 47): compaction and rollback keep what a
Hive reader sees, with Hive itself as the reader.

Every table shape the engine suite compacts or refuses (tests/engine: Spark's
Parquet, ORC, Avro and text writers through ``engine_helpers.make_table``,
codecs, text files as ingestion tools leave them - ``\\001`` fields, ``\\N`` and
``serialization.null.format``, an ISO-8859-1 encoding, escapes, arrays and maps,
partitions with their own descriptor, header and footer lines -, CHAR, VARCHAR,
DATE, BOOLEAN, FLOAT, DOUBLE, TINYINT and DECIMAL values their types pad,
truncate or reject, columns renamed by Hive's DDL, Parquet and ORC files as
Hive and Impala write them, a file left by a killed ``hdfs dfs -put``) is made
on the test bed's HDFS through its Metastore (apps/hive_reader_tables.py, one
Spark process, which also takes Spark's view of each). Then, through the
bed's HiveServer2 (Hive 2.3's SerDes and input formats, a fetch task in the
server, the server in +05:30), each table's rows as tokens
(hive_view.py: an order-independent checksum that can name the rows that
differ), one Beeline batch per stage:

1. before: Hive's view, compared with Spark's. Where they disagree the test
   says so and pins it (``DISAGREE``); the compaction must then refuse the
   table or partition, or keep Hive's view.
2. the engine CLI compacts every table in one spark-submit (each table's
   outcome pinned in ``OUTCOMES``); Hive's view of every table is unchanged
   (for a table Hive 2.3 cannot read whole: the same error, and the same view
   of the columns it can read).
3. one spark-submit rolls every table back; Hive's view is unchanged again.
   In the same batch, one value of one data file is changed (``dfs -put -f``
   through Hive) and the checksum must see it, then the file is put back.
"""

from __future__ import annotations

import json
import os
import re
import resource
import time
from pathlib import Path

import pytest

import hive_view as hv  # pylint: disable=import-error
from engine_submit import APP, app_python  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]
BASE = "/lk-hive-reader"

pytestmark = pytest.mark.testbed

# Tables (lk.hr_<shape>) whose Hive view differs from Spark's before anything is done, and how.
DISAGREE = {
    "lk.hr_copying": "rows: Hive reads the closed part-...parquet._COPYING_ file, Spark skips it",
    "lk.hr_orc_arrow_ts": "values: ORC nanoseconds (Hive .123456789, Spark .123456)",
    "lk.hr_pq_arrow_int96": "values: pyarrow's INT96 read as written by Hive (10:00), as UTC by Spark (15:30 in "
                            "+05:30); nanoseconds",
    "lk.hr_pq_arrow_int64": "Hive 2.3 cannot read INT64 TIMESTAMP_MICROS (its other columns agree)",
    "lk.hr_pq_snappy": "Hive 2.3 cannot read Spark's standard-layout decimals (INT64; its other columns agree)",
    "lk.hr_pq_zstd_parts": "Hive 2.3 cannot read Spark's standard-layout decimals (INT64; its other columns agree)",
    "lk.hr_text_header": "rows: Hive skips each file's header line, Spark reads it",
    "lk.hr_text_footer": "rows: Hive skips each file's footer line, Spark reads it",
}

# What the one compaction does to each table: its status, and the partitions it leaves (spec -> code).
OUTCOMES = {
    "lk.hr_avro_snappy": ("compacted", {}),
    "lk.hr_copying": ("compacted", {"dt=a": "unreadable_file"}),
    "lk.hr_ctrl_text": ("compacted", {}),
    "lk.hr_drift_orc": ("refused", {"": "schema_drift"}),
    "lk.hr_drift_parquet": ("refused", {"": "schema_drift"}),
    "lk.hr_orc_arrow_ts": ("compacted", {"dt=nanos": "unsupported_values"}),
    "lk.hr_orc_zlib": ("compacted", {}),
    "lk.hr_own_descriptor": ("compacted", {}),
    "lk.hr_pq_arrow_int64": ("compacted", {}),
    "lk.hr_pq_arrow_int96": ("refused", {"dt=micro": "unsupported_values", "dt=nanos": "unsupported_values"}),
    "lk.hr_pq_legacy_gzip": ("compacted", {}),
    "lk.hr_pq_snappy": ("compacted", {}),
    "lk.hr_pq_zstd_parts": ("compacted", {}),
    "lk.hr_tblprops_text": ("compacted", {}),
    "lk.hr_text_footer": ("refused", {"": "header_footer_lines"}),
    "lk.hr_text_gzip": ("compacted", {}),
    "lk.hr_text_header": ("refused", {"": "header_footer_lines"}),
    "lk.hr_text_types": ("compacted", {}),
}


def _error_kind(error: str) -> str:
    """An error without what names one file or object (a compacted table's files have new names)."""
    first = (error.strip().splitlines() or [""])[0]
    return re.sub(r"@[0-9a-f]+|hdfs://\S+|part-[\w.-]+", "<>", first)


class Stage:
    """Hive's views of every table at one stage, from one Beeline batch."""

    def __init__(self, tables: dict, results: list):
        self.full: dict[str, hv.View] = {}
        self.partial: dict[str, hv.View] = {}
        it = iter(results)
        for name, meta in tables.items():
            self.full[name] = _view(next(it), meta["columns"])
            if meta["hive_skip"]:
                self.partial[name] = _view(next(it), _readable(meta))

    @staticmethod
    def statements(tables: dict) -> list[str]:
        out = []
        for name, meta in tables.items():
            out.append(hv.view_sql(name, meta["columns"]))
            if meta["hive_skip"]:
                out.append(hv.view_sql(name, _readable(meta)))
        return out

    def differences(self, other: "Stage") -> dict[str, str]:
        """Table -> how its view here differs from ``other``'s (an error counts by its kind)."""
        out = {}
        for name, view in self.full.items():
            theirs = other.full[name]
            if view.error is not None or theirs.error is not None:
                if _error_kind(view.error or "") != _error_kind(theirs.error or ""):
                    out[name] = f"{view.checksum} / {theirs.checksum}"
            elif view.rows != theirs.rows:
                out[name] = view.diff(theirs)
        for name, view in self.partial.items():
            theirs = other.partial[name]
            if view.rows != theirs.rows or _error_kind(view.error or "") != _error_kind(theirs.error or ""):
                out[name + " (readable columns)"] = view.diff(theirs)
        return out


def _readable(meta: dict) -> list[dict]:
    return [c for c in meta["columns"] if c["name"] not in meta["hive_skip"]]


def _view(result, columns: list[dict]) -> hv.View:
    if result.error is not None:
        return hv.View(error=result.error)
    return hv.View(hv.rows_of(result, columns))


def _spark_view(meta: dict, columns: list[dict] | None = None) -> hv.View:
    sp = meta["spark"]
    if "error" in sp:
        return hv.View(error=sp["error"])
    keep = [i for i, c in enumerate(meta["columns"]) if columns is None or c in columns]
    return hv.View([tuple(r[i] for i in keep) for r in sp["rows"]])


def _hive_and_spark(name: str, meta: dict, stage: Stage) -> str | None:
    """How Hive's view of a table differs from Spark's (values compared as values), or None."""
    hive = stage.full[name]
    if hive.error is not None:
        partial = stage.partial.get(name)
        readable = _readable(meta)
        agree = partial is not None and partial.error is None and \
            hv.normalized(partial, readable) == hv.normalized(_spark_view(meta, readable), readable)
        return (f"Hive fails: {hv.first_line(hive.error)[:200]}; the columns it reads "
                f"{'agree' if agree else 'differ'}")
    spark = _spark_view(meta)
    if spark.error is not None:
        return f"Spark fails: {spark.error[:200]}"
    mine, theirs = hv.normalized(hive, meta["columns"]), hv.normalized(spark, meta["columns"])
    if mine == theirs:
        return None
    only_hive, only_spark = list((mine - theirs).elements()), list((theirs - mine).elements())
    return (f"{len(only_hive)} rows only Hive sees, e.g. {only_hive[:2]}; "
            f"{len(only_spark)} only Spark, e.g. {only_spark[:2]}")


def _cpu_seconds(bed) -> float:
    """CPU seconds so far of this process's children it waited for (the Spark
    drivers, Beeline) and of the bed's services, the executors they reaped
    included (on a shared bed: other sessions' work on it too)."""
    from testbed.procs import process_tree  # pylint: disable=import-error,import-outside-toplevel

    ticks = 0
    for pid in process_tree(bed.procs.values()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        ticks += sum(int(x) for x in stat[stat.rindex(")") + 2:].split()[11:15])  # utime stime cutime cstime
    own = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ticks / os.sysconf("SC_CLK_TCK") + own.ru_utime + own.ru_stime


def _engine(bed, workdir: Path, command: str, tables: list[str]) -> dict:
    """One spark-submit of the engine CLI over ``tables``; its result document
    (the exit code is not 0 when a table is refused: the document says which)."""
    result = workdir / f"{command}.json"
    p = bed.spark_submit(APP, command, "--tables", ",".join(tables), "--result-file", str(result),
                         confs={"spark.pyspark.python": app_python()}, timeout=1200)
    assert result.exists(), f"{command} wrote no result (exit {p.returncode}):\n{p.stderr[-4000:]}"
    return json.loads(result.read_text())


def _outcome(table: dict) -> tuple[str, dict]:
    left = {p["spec"]: p.get("code") for p in table.get("partitions") or []
            if p.get("status") not in ("compacted", None)}
    if table["status"] == "refused" and not table.get("partitions"):
        left = {"": table.get("code")}
    if table["status"] == "refused" and table.get("partitions"):
        left = {p["spec"]: p.get("code") for p in table["partitions"]}
    return table["status"], left


def test_hive_reads_the_same_rows_before_and_after_compaction_and_rollback(hiveserver2, tmp_path):
    bed = hiveserver2
    timings: dict[str, tuple[float, float]] = {}  # stage -> (wall, CPU) seconds
    t0, cpu0 = time.monotonic(), _cpu_seconds(bed)
    mark = [t0, cpu0]

    def lap(label: str) -> None:
        now, cpu = time.monotonic(), _cpu_seconds(bed)
        timings[label] = (round(now - mark[0], 1), round(cpu - mark[1], 1))
        mark[:] = [now, cpu]

    out = tmp_path / "tables.json"
    p = bed.run_python(ROOT / "tests" / "testbed" / "apps" / "hive_reader_tables.py", ROOT / "spark_app",
                       ROOT / "tests" / "engine", BASE, out, tmp_path, bed.info["hiveserver2"]["timezone"],
                       timeout=1200)
    assert p.returncode == 0 and out.exists(), p.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert "error" not in doc, doc["error"]
    # its JVM is pyspark's gateway, which the script's python does not wait for: counted as it reports it
    cpu0 -= doc["jvm_cpu_seconds"]
    mark[1] -= doc["jvm_cpu_seconds"]
    tables = dict(sorted(doc["tables"].items()))
    assert sorted(tables) == sorted(OUTCOMES), sorted(tables)
    lap("tables (one Spark process)")

    # 1. before: Hive's view of each table, and where it is not Spark's
    before = Stage(tables, bed.hive_batch(Stage.statements(tables)))
    lap("Hive before")
    disagree = {n: d for n, m in tables.items() if (d := _hive_and_spark(n, m, before)) is not None}
    report = [f"  {n}: {tables[n]['notes']}: {d}" for n, d in disagree.items()]
    print("Hive and Spark disagree before the compaction on:\n" + "\n".join(report))
    assert sorted(disagree) == sorted(DISAGREE), "\n".join(report)
    for name in ("lk.hr_pq_arrow_int64", "lk.hr_pq_snappy", "lk.hr_pq_zstd_parts"):
        assert disagree[name].endswith("the columns it reads agree"), disagree[name]
    assert "late-10" in disagree["lk.hr_copying"] and "10 rows only Hive sees" in disagree["lk.hr_copying"]
    assert "10:00:00.123456789" in disagree["lk.hr_orc_arrow_ts"]
    assert "'2020-01-01 10:00:00'" in disagree["lk.hr_pq_arrow_int96"]  # Hive: as written
    assert "'2020-01-01 15:30:00'" in disagree["lk.hr_pq_arrow_int96"]  # Spark: UTC, shown in +05:30
    for name, view in before.full.items():
        if name not in DISAGREE:
            assert view.error is None and sum(view.rows.values()) > 0, (name, view.checksum)

    # 2. one compaction of every table
    compacted = _engine(bed, tmp_path, "compact", list(tables))
    lap("compact (one spark-submit)")
    got = {t["table"]: _outcome(t) for t in compacted["tables"]}
    assert got == OUTCOMES, {n: (got.get(n), OUTCOMES[n]) for n in OUTCOMES if got.get(n) != OUTCOMES[n]}
    done = [n for n, (status, _left) in got.items() if status == "compacted"]
    after = Stage(tables, bed.hive_batch(Stage.statements(tables)))
    lap("Hive after compaction")
    assert after.differences(before) == {}, after.differences(before)

    # 3. one rollback of every compacted table, then the check seen failing once
    rolled = _engine(bed, tmp_path, "rollback", done)
    lap("rollback (one spark-submit)")
    assert {t["table"]: t["status"] for t in rolled["tables"]} == dict.fromkeys(done, "rolled_back"), rolled
    tamper = doc["tamper"]
    target = tamper["table"]
    probe = hv.view_sql(target, tables[target]["columns"])
    extra = [f"dfs -put -f {tamper['changed']} {tamper['file']}", probe,
             f"dfs -put -f {tamper['original']} {tamper['file']}", probe]
    drop = [f"DROP TABLE IF EXISTS {n}" for n in tables] + [f"dfs -rm -r -f -skipTrash {BASE}"]
    statements = Stage.statements(tables)
    results = bed.hive_batch(statements + extra + drop)
    lap("Hive after rollback, one value changed and put back, tables dropped")
    restored = Stage(tables, results[:len(statements)])
    assert restored.differences(before) == {}, restored.differences(before)
    put, changed, put_back, back = results[len(statements):len(statements) + len(extra)]
    assert put.error is None and put_back.error is None, (put, put_back)
    changed_view = _view(changed, tables[target]["columns"])
    assert changed_view.checksum != before.full[target].checksum
    assert changed_view.diff(before.full[target]) == (
        "1 rows only here, e.g. [('31', 'name-X', 'note 31, with | and ;')]; "
        "1 only there, e.g. [('31', 'name-31', 'note 31, with | and ;')]")
    assert _view(back, tables[target]["columns"]).checksum == before.full[target].checksum
    assert [r.error for r in results[len(statements) + len(extra):]] == [None] * len(drop)
    print(f"(wall, CPU) seconds by stage: {timings}; total wall {time.monotonic() - t0:.1f}, CPU "
          f"{_cpu_seconds(bed) - cpu0:.1f} (the Spark drivers, Beeline, the bed's services and executors)")
