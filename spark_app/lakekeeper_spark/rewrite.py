"""Writing the compacted copy of one unit into its hidden staging directory.

Parquet and ORC: read exactly the planned files with Spark's native readers
and let the scan pack them into splits of the target size, so each read task
writes one output file: one read, one write, no shuffle and no ``coalesce``
(which would collapse read parallelism). Text and Avro: read through the
table's Hive SerDe and write with the same SerDe, properties and codec via
``INSERT OVERWRITE DIRECTORY``, repartitioned to the target file count.
"""

from __future__ import annotations

import dataclasses
import uuid
import logging
from typing import Any

from .config import Settings
from .formats import spark_codec_name
from .model import TableInfo, Unit
from .names import qualified, sql_path_literal, sql_string_literal

log = logging.getLogger(__name__)

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclasses.dataclass
class WriteResult:
    rows_source: int  # rows of the unit's data before compaction


def _unit_session(spark: Any) -> Any:
    """A child session: its own SQL conf (split sizes, codecs) over the shared
    SparkContext and catalog, so concurrent units cannot disturb each other."""
    s = spark.newSession()
    s.conf.set("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    s.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    return s


def write_staging(
    spark: Any, table: TableInfo, unit: Unit, settings: Settings, codec: dict[str, Any]
) -> WriteResult:
    fmt = table.format
    if fmt in ("parquet", "orc"):
        return _write_native(spark, table, unit, settings, codec)
    if fmt in ("text", "avro"):
        return _write_hive_serde(spark, table, unit, codec)
    raise ValueError(f"unsupported format {fmt}")


def _write_native(spark: Any, table: TableInfo, unit: Unit, settings: Settings, codec: dict[str, Any]) -> WriteResult:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType
    import json

    fmt = table.format
    s = _unit_session(spark)
    # Pack whole files into read splits of about the target size. With
    # minPartitionNum=1 Spark does not shrink splits to spread small inputs
    # over all cores, so the number of read tasks (= output files) follows
    # the data size. Output size tracks input size: the codec is unchanged.
    s.conf.set("spark.sql.files.maxPartitionBytes", str(settings.target_file_bytes))
    s.conf.set("spark.sql.files.openCostInBytes", "1")
    s.conf.set("spark.sql.files.minPartitionNum", "1")
    s.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
    s.conf.set("spark.sql.files.ignoreMissingFiles", "false")
    if fmt == "parquet":
        s.conf.set("spark.sql.parquet.writeLegacyFormat", "true" if codec.get("legacy") else "false")
    schema = StructType.fromJson(json.loads(table.data_schema_json))
    paths = [f"{unit.location.rstrip('/')}/{f.name}" for f in unit.listing.files]
    obs = Observation("lk_" + uuid.uuid4().hex[:12])
    df = s.read.schema(schema).format(fmt).load(paths).observe(obs, F.count(F.lit(1)).alias("rows"))
    writer = df.write.mode("errorifexists").format(fmt)
    name = spark_codec_name(fmt, codec.get("codec"))
    if name:
        writer = writer.option("compression", name)
    log.info("%s: writing %d files (%d bytes) into %s as %s/%s", unit.spec or table.full_name,
             unit.stats.files, unit.stats.bytes, unit.staging, fmt, name)
    writer.save(unit.staging)
    # The write pass itself counts what it read from exactly the planned
    # files (corrupt or vanished files fail the job instead of being
    # skipped), so no separate counting pass over the source is needed.
    rows = int(obs.get["rows"])
    return WriteResult(rows_source=rows)


def partition_filter(table: TableInfo, spec: dict[str, str] | None) -> Any:
    from pyspark.sql import functions as F

    cond = F.lit(True)
    for col, value in (spec or {}).items():
        c = F.col(f"`{col}`")
        cond = cond & (c.isNull() if value == HIVE_DEFAULT_PARTITION else (c == F.lit(value)))
    return cond


def _write_hive_serde(spark: Any, table: TableInfo, unit: Unit, codec: dict[str, Any]) -> WriteResult:
    s = _unit_session(spark)
    c = codec.get("codec")
    if table.format == "text":
        s.conf.set("hive.exec.compress.output", "true" if c else "false")
        if c:
            s.conf.set("mapreduce.output.fileoutputformat.compress.codec", c)
    else:  # avro
        compressed = bool(c and c != "null")
        s.conf.set("hive.exec.compress.output", "true" if compressed else "false")
        if compressed:
            s.conf.set("avro.output.codec", c)
    cols = [f"`{n}`" for n, _type in table.data_columns]
    src = s.table(qualified(table.db, table.name)).where(partition_filter(table, unit.partition)).select(*cols)
    rows_source = int(src.count())  # text and Avro have no row counts in metadata: a scan
    view = "lk_unit_source"
    src.createOrReplaceTempView(view)
    props = dict(table.serde_properties)
    if table.format == "avro":
        # The Avro SerDe names records after the output; give it the writer
        # schema of the existing files so the new files carry the same one.
        props["avro.schema.literal"] = codec["schema"]
    prop_sql = ", ".join(f"{sql_string_literal(k)}={sql_string_literal(v)}" for k, v in sorted(props.items()))
    n = max(1, unit.decision.target_files)
    log.info("%s: writing %d files into %s through %s", unit.spec or table.full_name, unit.stats.files,
             unit.staging, table.serde)
    s.sql(
        f"INSERT OVERWRITE DIRECTORY {sql_path_literal(unit.staging)} "
        f"ROW FORMAT SERDE {sql_string_literal(table.serde or '')} WITH SERDEPROPERTIES ({prop_sql}) "
        f"STORED AS INPUTFORMAT {sql_string_literal(table.input_format or '')} "
        f"OUTPUTFORMAT {sql_string_literal(table.output_format or '')} "
        f"SELECT /*+ REPARTITION({n}) */ {', '.join(cols)} FROM {view}"
    )
    s.catalog.dropTempView(view)
    return WriteResult(rows_source=rows_source)
