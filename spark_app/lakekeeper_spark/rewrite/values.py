"""Values a unit's files hold that Spark cannot carry: the unit is refused
before anything is written (``unsupported_values``), never rewritten and
verified away.

Spark holds a timestamp in microseconds. Hive and Impala write nanoseconds
(Parquet INT96, ORC, text ``.123456789``); Spark reads ``...123456789`` as
``...123456`` and writes that, and the content checksum, taken on values as
Spark decodes them on both sides, cannot see it. So each unit to compact is
checked for timestamps with digits below a microsecond that are not zero,
in the files it rewrites:

- **Parquet**: the INT96 columns of every file not written by Spark (its
  footer names Spark: Spark writes whole microseconds), read from the raw
  pages on the driver (``storage.timestamps.int96_sub_micro``: the INT96
  column chunks only, a dictionary-encoded chunk by its dictionary; INT96
  files carry no usable statistics). Files whose timestamps are INT64 with
  nanoseconds (``TIMESTAMP(NANOS)``) or without ``isAdjustedToUTC`` (Spark
  writes a ``timestamp`` column adjusted to UTC: readers that read the flag,
  Impala and Hive 3, would shift the values) are refused from their footers.
  So are INT96 files that parquet-mr did not write (Impala's, parquet-cpp's:
  their footer's ``created_by``), whatever their values: Hive reads their
  INT96 values as written but converts a parquet-mr file's from UTC to its
  time zone, so Spark's copy would shift every value by the Hive server's
  UTC offset (tests/testbed/test_hive_reader.py, Hive 2.3 in +05:30).
- **ORC**: the timestamp columns (nested ones too) of every file not written
  by Spark, read by Spark as strings: ORC's own type conversion formats the
  stored nanoseconds (``yyyy-MM-dd HH:mm:ss.fffffffff``). Column statistics
  carry only a minimum and a maximum, which cannot show that no value has
  nanoseconds. One Spark job for all the table's units (per
  ``CHECK_BATCH`` units), reading only the timestamp columns.
- **text**: the raw lines of the unit's files (Spark's text source), each
  timestamp column's field (a nested one: its whole field) matched against
  the same pattern; the field delimiter and escape character are the unit's
  own SerDe properties. One Spark job for all the table's units.

Nothing is read for a unit whose table has no timestamp column, nor (Parquet
and ORC) for files Spark wrote. A unit refused here is reported with its
first offending column and value; a merge batch's files are not checked.
"""

from __future__ import annotations

import json
import logging
from functools import reduce
from typing import Any

from ..report.model import Decision, TableInfo, Unit
from ..policy.names import quote_column
from ..storage.formats import parquet_reader_at, reader_properties
from ..storage.timestamps import LOCAL_SUFFIX, NANOS, SUB_MICRO_REGEX, int96_read_as_written, int96_sub_micro
from .unit_formats import representatives

log = logging.getLogger(__name__)

CODE = "unsupported_values"
# Units checked by one Spark job (a union of their reads).
CHECK_BATCH = 200
_TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz")


def _refuse(info: TableInfo, u: Unit, what: str, why: str | None = None) -> None:
    why = why or ("Spark holds timestamps in microseconds, so the compacted copy would not keep them "
                  "(its verification, reading through Spark too, would not see it)")
    reason = f"{what}; {why}; nothing was written or moved"
    log.warning("%s %s: %s: %s", info.full_name, u.spec or "(table)", CODE, reason)
    u.decision = Decision("refuse", reason, u.stats.files, u.decision.rule, code=CODE)


def check_units(spark: Any, info: TableInfo, units: list[Unit], facts: dict[str, dict[str, Any]]) -> None:
    """Refuse (``unsupported_values``) each unit to compact whose files hold
    timestamps Spark cannot carry. ``facts``: ``unit_formats.read_facts``."""
    todo = [u for u in units if u.decision.action == "compact" and u.rewrite_files]
    if not todo or not any(_has_timestamp(t) for _n, t in info.data_columns):
        return
    if info.format == "parquet":
        for u in todo:
            _parquet_unit(spark, info, u, facts)
    elif info.format == "orc":
        todo = [u for u in todo if _foreign_files(u, facts)]
        found = _scan(spark, info, todo, lambda s, u: _orc_read(s, info, u, facts))
        for u in todo:
            if u.spec in found:
                column, value = found[u.spec]
                _refuse(info, u, f"its ORC files hold timestamps with nanoseconds, e.g. {column} = {value}")
    elif info.format == "text":
        found = _scan(spark, info, todo, lambda s, u: _text_read(s, info, u))
        for u in todo:
            if u.spec in found:
                column, value = found[u.spec]
                _refuse(info, u, f"its text files hold timestamps with digits below a microsecond, e.g. {column}: "
                                 f"{value!r}")


def _has_timestamp(type_text: str) -> bool:
    return "timestamp" in type_text.lower()


def _foreign_files(u: Unit, facts: dict[str, dict[str, Any]]) -> list[str]:
    """The unit's files to rewrite that Spark did not write (by their write job's footer)."""
    base = u.location.rstrip("/")
    return [f"{base}/{f.name}" for first, files in representatives(u)
            if not facts.get(f"{base}/{first.name}", {}).get("spark_written") for f in files]


def _parquet_unit(spark: Any, info: TableInfo, u: Unit, facts: dict[str, dict[str, Any]]) -> None:
    base = u.location.rstrip("/")
    ntz = any("timestamp_ntz" in t.lower() for _n, t in info.data_columns)
    for first, files in representatives(u):
        f = facts.get(f"{base}/{first.name}", {})
        for t in f.get("timestamps") or ():
            if t.startswith(NANOS):
                return _refuse(info, u, f"its Parquet file {first.name} stores timestamps as INT64 {t} "
                                        f"(nanoseconds)")
            if t.endswith(LOCAL_SUFFIX) and not ntz:
                return _refuse(info, u, f"its Parquet file {first.name} stores timestamps as INT64 {t}: Spark "
                                        f"writes a timestamp column adjusted to UTC, which readers of the flag "
                                        f"(Impala, Hive 3) would read shifted by their time zone")
    for first, files in representatives(u):
        f = facts.get(f"{base}/{first.name}", {})
        if not f.get("int96") or f.get("spark_written"):
            continue
        for file in files:
            hit = int96_sub_micro(spark, parquet_reader_at(spark, f"{base}/{file.name}"))
            if hit is not None:
                return _refuse(info, u, f"its Parquet file {file.name} holds INT96 timestamps with nanoseconds, "
                                        f"e.g. {hit[0]} = {hit[1]} (UTC)")
    for first, files in representatives(u):
        f = facts.get(f"{base}/{first.name}", {})
        if f.get("int96") and int96_read_as_written(f.get("created_by")):
            return _refuse(info, u, f"its Parquet file {first.name} stores INT96 timestamps written by "
                                    f"{f.get('created_by') or 'an unnamed writer'} (not parquet-mr)",
                           "Hive reads those as written but converts the INT96 values of a file parquet-mr wrote "
                           "(Spark's copy) from UTC to its time zone, so it would see every value shifted by its "
                           "UTC offset")
    return None


def _scan(spark: Any, info: TableInfo, units: list[Unit], read: Any) -> dict[str, tuple[str, str]]:
    """Unit spec -> (column, example) of the units whose read (``read(session,
    unit)``: columns ``column``, ``example``, only the offending rows) has a
    row: one Spark job per ``CHECK_BATCH`` units."""
    from pyspark.sql import functions as F

    if not units:
        return {}
    s = spark.newSession()
    s.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
    s.conf.set("spark.sql.files.ignoreMissingFiles", "false")
    most = max(len(u.rewrite_files) for u in units)
    s.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, most + 1)))
    out: dict[str, tuple[str, str]] = {}
    for start in range(0, len(units), CHECK_BATCH):
        batch = units[start:start + CHECK_BATCH]
        reads = [read(s, u).select(F.lit(i).alias("__lk_unit"), "column", "example") for i, u in enumerate(batch)]
        rows = (reduce(lambda a, b: a.unionByName(b), reads)
                .groupBy("__lk_unit").agg(F.min(F.struct("column", "example")).alias("first")).collect())
        for r in rows:
            out[batch[int(r["__lk_unit"])].spec] = (str(r["first"]["column"]), str(r["first"]["example"])[:200])
    return out


def _as_strings(node: Any) -> Any:
    """A Spark schema's JSON with every timestamp type made ``string``."""
    if isinstance(node, dict):
        return {k: ("string" if isinstance(v, str) and v in _TIMESTAMP_TYPES and k in
                    ("type", "elementType", "keyType", "valueType") else _as_strings(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_as_strings(v) for v in node]
    return node


def _sub_micro(col: Any, dt: Any) -> Any:
    """Whether ``col`` (read with timestamps as strings) holds a timestamp
    with digits below a microsecond; None if ``dt`` has no timestamp."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    if dt.typeName() in _TIMESTAMP_TYPES:
        return F.coalesce(col.rlike(SUB_MICRO_REGEX), F.lit(False))
    if isinstance(dt, ArrayType):
        if _sub_micro(F.lit(None), dt.elementType) is None:
            return None
        return F.coalesce(F.exists(col, _within(dt.elementType)), F.lit(False))
    if isinstance(dt, MapType):
        parts = [F.coalesce(F.exists(side, _within(t)), F.lit(False))
                 for side, t in ((F.map_keys(col), dt.keyType), (F.map_values(col), dt.valueType))
                 if _sub_micro(F.lit(None), t) is not None]
        return reduce(lambda a, b: a | b, parts) if parts else None
    if isinstance(dt, StructType):
        parts = [p for p in (_sub_micro(col.getField(f.name), f.dataType) for f in dt.fields) if p is not None]
        return reduce(lambda a, b: a | b, parts) if parts else None
    return None


def _within(dt: Any) -> Any:
    """``_sub_micro`` of an element of type ``dt``, as a one-argument lambda (``F.exists``)."""
    return lambda x: _sub_micro(x, dt)


def _orc_read(s: Any, info: TableInfo, u: Unit, facts: dict[str, dict[str, Any]]) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    original = StructType.fromJson(json.loads(info.data_schema_json))
    strings = StructType.fromJson(_as_strings(json.loads(info.data_schema_json)))
    df = s.read.schema(strings).format("orc").load(_foreign_files(u, facts))
    checks = []
    for f in original.fields:
        col = F.col(quote_column(f.name))
        pred = _sub_micro(col, f.dataType)
        if pred is not None:
            text = col if f.dataType.typeName() in _TIMESTAMP_TYPES else F.to_json(col)
            checks.append(F.when(pred, F.struct(F.lit(f.name).alias("column"), text.alias("example"))))
    hit = F.coalesce(*checks) if len(checks) > 1 else checks[0]
    return df.select(hit.alias("hit")).where(F.col("hit").isNotNull()).select("hit.column", "hit.example")


def _delimiter(props: dict[str, str], key: str, default: str) -> str | None:
    """A LazySimpleSerDe separator as it reads it (``LazySerDeParameters.getByte``:
    a number is a byte's value, else the first character)."""
    v = props.get(key)
    if v is None or v == "":
        return default
    try:
        return chr(int(v) & 0xFF)
    except ValueError:
        return v[0]


def _regex_char(c: str) -> str:
    """One character in a Java regex, inside a character class or not."""
    return "\\x{%x}" % ord(c)


def _text_read(s: Any, info: TableInfo, u: Unit) -> Any:
    from pyspark.sql import functions as F

    props = reader_properties(info, u.storage)
    sep = _delimiter(props, "field.delim", _delimiter(props, "serialization.format", "\x01") or "\x01") or "\x01"
    esc = props.get("escape.delim")
    q = _regex_char(sep)
    base = u.location.rstrip("/")
    line = F.col("value")
    if esc:  # an escaped character is never part of a timestamp: gone before the fields are counted
        line = F.regexp_replace(line, _regex_char(esc[0]) + "(?s:.)", "")
    checks = []
    for j, (name, type_text) in enumerate(info.data_columns):
        if not _has_timestamp(type_text):
            continue
        field = F.regexp_extract(line, f"^(?:[^{q}]*{q}){{{j}}}([^{q}]*)", 1)
        checks.append(F.when(field.rlike(SUB_MICRO_REGEX),
                             F.struct(F.lit(name).alias("column"), F.substring(field, 1, 200).alias("example"))))
    hit = F.coalesce(*checks) if len(checks) > 1 else checks[0]
    df = s.read.format("text").load([f"{base}/{f.name}" for f in u.rewrite_files])
    return df.select(hit.alias("hit")).where(F.col("hit").isNotNull()).select("hit.column", "hit.example")
