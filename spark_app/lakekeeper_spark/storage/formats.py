"""File formats: which one a table uses, which codec its files carry, and
how to count rows without scanning data where the format allows it."""

from __future__ import annotations

import logging
import re
from typing import Any

from ..report.model import Storage, TableInfo
from ..compat.jvm import java_class
from .timestamps import INT96, parquet_timestamp_types

log = logging.getLogger(__name__)

SUPPORTED = ("parquet", "orc", "avro", "text")

_BY_SERDE = {
    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe": "parquet",
    "org.apache.hadoop.hive.ql.io.orc.OrcSerde": "orc",
    "org.apache.hadoop.hive.serde2.avro.AvroSerDe": "avro",
    "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe": "text",
}
_TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"

# Text output codecs by file extension (Hadoop's CompressionCodecFactory names).
TEXT_CODECS = {
    ".gz": "org.apache.hadoop.io.compress.GzipCodec",
    ".bz2": "org.apache.hadoop.io.compress.BZip2Codec",
    ".deflate": "org.apache.hadoop.io.compress.DefaultCodec",
    ".snappy": "org.apache.hadoop.io.compress.SnappyCodec",
    ".lz4": "org.apache.hadoop.io.compress.Lz4Codec",
    ".zst": "org.apache.hadoop.io.compress.ZStandardCodec",
}


def detect_format(info: TableInfo | Storage) -> str | None:
    """parquet, orc, avro, text, or None for anything else (OpenCSVSerde,
    RegexSerDe, JsonSerDe, SequenceFile...): of a table, or of a
    partition's own storage descriptor."""
    provider = (getattr(info, "provider", None) or "").lower()
    if provider in ("parquet", "orc"):
        return provider
    if provider not in ("", "hive"):
        return None
    fmt = _BY_SERDE.get(info.serde or "")
    if fmt == "text" and info.input_format != _TEXT_INPUT:
        return None  # e.g. SequenceFile with LazySimpleSerDe
    if fmt is None and (info.input_format or "").endswith("MapredParquetInputFormat"):
        return "parquet"
    return fmt


# Keys the write's own DDL sets (or that describe the table, not its rows):
# never passed on as SerDe properties.
_NOT_SERDE = {
    "transient_lastDdlTime", "EXTERNAL", "numFiles", "numRows", "totalSize", "rawDataSize",
    "numFilesErasureCoded", "COLUMN_STATS_ACCURATE", "external.table.purge", "last_modified_by",
    "last_modified_time", "comment", "columns", "columns.types", "columns.comments", "name",
    "serialization.lib", "serialization.ddl", "file.inputformat", "file.outputformat", "location",
    "partition_columns", "partition_columns.types", "bucket_count", "bucket_field_name",
}


def reader_properties(table: TableInfo, storage: Storage | None = None) -> dict[str, str]:
    """The properties a table's (or a partition's) SerDe is initialised with
    when Hive or Spark reads it, layered the way they layer them: the
    table's SerDe properties, overridden by its table properties (Hive's
    ``MetaStoreUtils.getSchema``: ``TBLPROPERTIES('serialization.null.format'
    ='')`` wins over the SerDe's), and for a partition, its own SerDe
    properties and then its parameters over those (``SerDeUtils``' overlay,
    Spark's ``HadoopTableReader``). Statistics and bookkeeping keys left out."""
    layers = [table.serde_properties, table.properties]
    if storage is not None:
        layers += [storage.serde_properties, storage.parameters]
    out: dict[str, str] = {}
    for layer in layers:
        out.update({k: v for k, v in layer.items() if v is not None})
    return {k: v for k, v in out.items() if k not in _NOT_SERDE and not k.startswith("spark.sql.")}


def _count(props: dict[str, str], key: str) -> int:
    try:
        return int(str(props.get(key, "0")).strip() or "0")
    except ValueError:
        return -1  # unreadable: treated as set


def unfaithful_properties(fmt: str, props: dict[str, str], columns: list[tuple[str, str]]) -> tuple[str, str] | None:
    """(code, reason) when a text table's (or partition's) properties make a
    SerDe rewrite change what readers see; None when every property the
    SerDe reads is carried onto the write (they all are, see
    ``reader_properties``) and honoured by it."""
    if fmt != "text":
        return None
    header = _count(props, "skip.header.line.count")
    footer = _count(props, "skip.footer.line.count")
    if header or footer:
        which = ", ".join(f"{k}={props[k]}" for k in ("skip.header.line.count", "skip.footer.line.count")
                          if k in props)
        return ("header_footer_lines",
                f"{which}: Hive and Impala skip these lines at the start/end of every file, Spark reads "
                f"them as rows; merging files changes how many such lines there are, so one of them would "
                f"see different rows")
    line = props.get("line.delim")
    if line is not None and line not in ("\n", "10"):
        return ("serde_property",
                f"line.delim={line!r}: the text output format writes it between rows, but Hadoop's "
                f"TextInputFormat reads lines split at newlines; the rewrite would not read back as the original")
    if props.get("timestamp.formats") and any("timestamp" in t.lower() for _n, t in columns):
        return ("serde_property",
                f"timestamp.formats={props['timestamp.formats']!r}: LazySimpleSerDe reads timestamps in these "
                f"formats but writes its default one, so the files' text would change (readers that do not "
                f"apply timestamp.formats, e.g. Impala, would see other values)")
    return None


def _jpath(spark: Any, uri: str) -> Any:
    return java_class(spark._jvm, "org.apache.hadoop.fs.Path")(uri)


def _parquet_reader(spark: Any, path: Any, conf: Any, row_groups: bool = True) -> Any:
    """A ``ParquetFileReader`` of the file at ``path`` (a Hadoop ``Path``)
    with read options over ``conf``. ``ParquetFileReader.open(file)``
    without options makes its own: from Parquet 1.14 on (Spark 4) that is
    a new Hadoop ``Configuration`` loaded from the XML files on the class
    path, about 9 % of the driver JVM's CPU in a profile of small
    partitions (several footers a unit). ``row_groups=False``: the
    schema and key-value metadata only."""
    jvm = spark._jvm
    builder = java_class(jvm, "org.apache.parquet.HadoopReadOptions").builder(conf)
    if not row_groups:
        builder = builder.withMetadataFilter(
            java_class(jvm, "org.apache.parquet.format.converter.ParquetMetadataConverter").SKIP_ROW_GROUPS)
    return java_class(jvm, "org.apache.parquet.hadoop.ParquetFileReader").open(
        java_class(jvm, "org.apache.parquet.hadoop.util.HadoopInputFile").fromPath(path, conf), builder.build())


def parquet_reader_at(spark: Any, uri: str) -> Any:
    """A ``ParquetFileReader`` of the file at ``uri`` (row groups read)."""
    return _parquet_reader(spark, _jpath(spark, uri), spark._jsc.hadoopConfiguration())


# Where Spark's Parquet writer keeps the exact Spark schema of the rows.
_SPARK_PARQUET_SCHEMA = "org.apache.spark.sql.parquet.row.metadata"
# The key-value metadata (Parquet) / user metadata (ORC) Spark's writers add
# since Spark 3.0: a file with it holds timestamps Spark wrote (whole microseconds).
_SPARK_VERSION_KEY = "org.apache.spark.version"


def timestamp_types(types: dict[str, str]) -> list[str]:
    """The distinct physical timestamp types of a file (``parquet_timestamp_types``), sorted."""
    return sorted(set(types.values()))


def parquet_footer(spark: Any, uri: str, spark_schema: bool = False) -> dict[str, Any]:
    """Rows, codec and physical schema from a Parquet footer; with
    ``spark_schema`` also the schema Spark reads the file with (as JSON),
    found the way Spark's own schema inference finds it: the Spark schema
    the writer stored in the footer, else the physical schema converted."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    reader = _parquet_reader(spark, _jpath(spark, uri), conf)
    try:
        footer = reader.getFooter()
        blocks = footer.getBlocks()
        count = int(blocks.size())
        rows = sum(int(blocks.get(i).getRowCount()) for i in range(count))
        codec = _first_codec(blocks, count)
        meta = footer.getFileMetaData()
        out = {"rows": rows, "codec": codec, "schema": str(meta.getSchema().toString())}
        out["timestamps"] = timestamp_types(parquet_timestamp_types(out["schema"]))
        if spark_schema:
            stored = meta.getKeyValueMetaData().get(_SPARK_PARQUET_SCHEMA)
            if stored is None:
                sql_conf = spark._jsparkSession.sessionState().conf()
                converter = java_class(jvm, "org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter")
                stored = converter(sql_conf).convert(meta.getSchema()).json()
            out["spark_schema"] = str(stored)
        return out
    finally:
        reader.close()


def _first_codec(blocks: Any, count: int) -> str | None:
    """The codec of a Parquet footer's first column chunk (``CompressionCodecName``),
    None without row groups (``count``) or columns; each object asked for once."""
    if not count:
        return None
    columns = blocks.get(0).getColumns()
    return str(columns.get(0).getCodec().name()) if columns.size() else None


def orc_footer(spark: Any, uri: str, spark_schema: bool = False) -> dict[str, Any]:
    """Rows and codec from an ORC file's footer; with ``spark_schema`` also
    the schema Spark reads it with (JSON, Spark's own conversion)."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    orc = java_class(jvm, "org.apache.orc.OrcFile")
    reader = orc.createReader(_jpath(spark, uri), orc.readerOptions(conf))
    try:
        out = {"rows": int(reader.getNumberOfRows()), "codec": str(reader.getCompressionKind().name())}
        if spark_schema:
            utils = java_class(jvm, "org.apache.spark.sql.execution.datasources.orc.OrcUtils")
            out["spark_schema"] = str(utils.toCatalystSchema(reader.getSchema()).json())
        return out
    finally:
        reader.close()


def largest_piece_bytes(spark: Any, fmt: str, uri: str) -> int:
    """The largest Parquet row group or ORC stripe of a file, in bytes on
    disk (one read of its footer): no rewrite cuts a file inside one."""
    conf = spark._jsc.hadoopConfiguration()
    if fmt == "parquet":
        reader = _parquet_reader(spark, _jpath(spark, uri), conf)
        try:
            blocks = reader.getFooter().getBlocks()
            return max((int(blocks.get(i).getCompressedSize()) for i in range(blocks.size())), default=0)
        finally:
            reader.close()
    if fmt == "orc":
        orc = java_class(spark._jvm, "org.apache.orc.OrcFile")
        reader = orc.createReader(_jpath(spark, uri), orc.readerOptions(conf))
        try:
            stripes = reader.getStripes()
            return max((int(stripes.get(i).getLength()) for i in range(stripes.size())), default=0)
        finally:
            reader.close()
    raise ValueError(f"no row groups or stripes in {fmt}")


# Physical schema text -> its columns as Spark reads them (converted once per distinct schema).
_CONVERTED: dict[tuple[str, str], list[tuple[str, str]]] = {}


def _columns_of(spark: Any, fmt: str, physical: Any) -> list[tuple[str, str]]:
    """``(name, Spark SQL type)`` of a Parquet ``MessageType`` or an ORC
    ``TypeDescription``, by Spark's own conversion, once per distinct schema."""
    from pyspark.sql.types import StructType
    import json

    text = str(physical.toString())
    if (fmt, text) not in _CONVERTED:
        jvm = spark._jvm
        if fmt == "parquet":
            sql_conf = spark._jsparkSession.sessionState().conf()
            converter = java_class(jvm, "org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter")
            schema_json = str(converter(sql_conf).convert(physical).json())
        else:
            schema_json = str(java_class(jvm, "org.apache.spark.sql.execution.datasources.orc.OrcUtils").toCatalystSchema(
                physical).json())
        st = StructType.fromJson(json.loads(schema_json))
        _CONVERTED[(fmt, text)] = [(f.name, f.dataType.simpleString()) for f in st.fields]
    return list(_CONVERTED[(fmt, text)])


def file_columns(spark: Any, fmt: str, uri: str) -> list[tuple[str, str]]:
    """The columns of a Parquet or ORC file, ``(name, Spark SQL type)`` in
    the file's order, with the names the file has (not the table's): from
    its footer only (Parquet without the row groups), no Spark job. Types
    are Spark's conversion of the physical schema (Parquet:
    ``ParquetToSparkSchemaConverter``, ORC: ``OrcUtils.toCatalystSchema``),
    done once per distinct physical schema."""
    conf = spark._jsc.hadoopConfiguration()
    if fmt == "parquet":
        reader = _parquet_reader(spark, _jpath(spark, uri), conf, row_groups=False)
        try:
            return _columns_of(spark, fmt, reader.getFooter().getFileMetaData().getSchema())
        finally:
            reader.close()
    if fmt == "orc":
        return _orc_facts(spark, uri)["columns"]
    raise ValueError(f"no footer for {fmt}")


def _orc_facts(spark: Any, uri: str) -> dict[str, Any]:
    """An ORC file's codec and columns, from one read of its footer."""
    orc = java_class(spark._jvm, "org.apache.orc.OrcFile")
    reader = orc.createReader(_jpath(spark, uri), orc.readerOptions(spark._jsc.hadoopConfiguration()))
    try:
        return {"codec": str(reader.getCompressionKind().name()).lower(),
                "columns": _columns_of(spark, "orc", reader.getSchema()),
                "spark_written": bool(reader.hasMetadataValue(_SPARK_VERSION_KEY))}
    finally:
        reader.close()


def file_facts(spark: Any, fmt: str, uri: str) -> dict[str, Any]:
    """What a rewrite must keep of one data file, from one read of its
    metadata (none for text): ``codec`` (named as ``detect_codec`` names it;
    None for a Parquet file without row groups, which has none), for
    Parquet and ORC ``columns`` (as ``file_columns``), for Parquet
    ``layout`` (``parquet_layout``), for Avro the writer ``schema``."""
    conf = spark._jsc.hadoopConfiguration()
    if fmt == "parquet":
        reader = _parquet_reader(spark, _jpath(spark, uri), conf)
        try:
            footer = reader.getFooter()
            blocks = footer.getBlocks()
            codec = _first_codec(blocks, int(blocks.size()))
            codec = codec.lower() if codec else None
            meta = footer.getFileMetaData()
            physical = meta.getSchema()
            text = str(physical.toString())
            types = parquet_timestamp_types(text)
            keys = meta.getKeyValueMetaData()
            return {"codec": codec, "columns": _columns_of(spark, fmt, physical),
                    "created_by": str(meta.getCreatedBy() or ""),
                    "layout": parquet_layout(text), "timestamps": timestamp_types(types),
                    "int96": sorted(n for n, t in types.items() if t == INT96),
                    "spark_written": bool(keys.containsKey(_SPARK_VERSION_KEY) or keys.containsKey(_SPARK_PARQUET_SCHEMA))}
        finally:
            reader.close()
    if fmt == "orc":
        return _orc_facts(spark, uri)
    if fmt == "avro":
        return avro_header(spark, uri)
    if fmt == "text":
        return {"codec": text_codec(uri)}
    raise ValueError(fmt)


def _codec_name(fmt: str, footer: dict[str, Any]) -> str:
    """A footer's codec as the engine names it (lower case; Parquet files
    without compression say ``uncompressed``)."""
    if fmt == "parquet":
        return (footer["codec"] or "UNCOMPRESSED").lower()
    return str(footer["codec"]).lower()


def data_file_footer(spark: Any, fmt: str, uri: str) -> dict[str, Any]:
    """One read of a Parquet or ORC file's metadata: ``rows``, ``codec``
    (named as ``detect_codec`` names it), ``spark_schema`` (JSON) and for
    Parquet ``layout`` (``parquet_layout``)."""
    if fmt == "parquet":
        f = parquet_footer(spark, uri, spark_schema=True)
    elif fmt == "orc":
        f = orc_footer(spark, uri, spark_schema=True)
    else:
        raise ValueError(f"no footer for {fmt}")
    out = {"rows": f["rows"], "codec": _codec_name(fmt, f), "spark_schema": f["spark_schema"]}
    if fmt == "parquet":
        out["layout"] = parquet_layout(f["schema"])
        out["timestamps"] = f["timestamps"]
    return out


def avro_header(spark: Any, uri: str) -> dict[str, Any]:
    jvm = spark._jvm
    p = _jpath(spark, uri)
    stream = p.getFileSystem(spark._jsc.hadoopConfiguration()).open(p)
    try:
        datum_reader = java_class(jvm, "org.apache.avro.generic.GenericDatumReader")()
        dfs = java_class(jvm, "org.apache.avro.file.DataFileStream")(stream, datum_reader)
        try:
            codec = dfs.getMetaString("avro.codec")
            return {"codec": str(codec) if codec else "null", "schema": str(dfs.getSchema().toString())}
        finally:
            dfs.close()
    finally:
        stream.close()


def detect_codec(spark: Any, fmt: str, uri: str) -> dict[str, Any]:
    """Codec (and, for Avro, the writer schema) of an existing data file."""
    if fmt == "parquet":
        f = parquet_footer(spark, uri)
        return {"codec": _codec_name(fmt, f), "legacy": parquet_layout(f["schema"]) == "legacy"}
    if fmt == "orc":
        return {"codec": _codec_name(fmt, orc_footer(spark, uri))}
    if fmt == "avro":
        return avro_header(spark, uri)
    if fmt == "text":
        return {"codec": text_codec(uri)}
    raise ValueError(fmt)


def text_codec(uri: str) -> str | None:
    """The codec Hadoop reads a text file with, chosen by its name's
    extension (``CompressionCodecFactory``); None: plain text."""
    for ext, codec in TEXT_CODECS.items():
        if uri.endswith(ext):
            return codec
    return None


# A decimal column and its physical type, in parquet-mr's schema text
# ("optional int64 amount (DECIMAL(12,2));").
_PARQUET_DECIMAL = re.compile(r"\b(int32|int64|fixed_len_byte_array\(\d+\)|binary) .*?\(decimal\((\d+),\s*\d+\)\)")


def parquet_layout(schema: str) -> str | None:
    """How a Parquet file lays out what the two layouts write differently
    (``spark.sql.parquet.writeLegacyFormat``): ``legacy`` (Hive, Impala,
    Spark with writeLegacyFormat: a decimal of precision 18 or less as
    fixed_len_byte_array, lists as ``bag``/``array``/``array_element``
    groups), ``standard`` (such a decimal as int32/int64, lists as
    ``list``/``element``), or None when the file holds nothing the two
    write differently (no such decimal, no list): either layout is the same
    file then. Evidence of both: ``legacy`` (what older readers need)."""
    s = schema.lower()
    legacy = standard = False
    for physical, precision in _PARQUET_DECIMAL.findall(s):
        if int(precision) <= 18:
            if physical.startswith("fixed_len_byte_array"):
                legacy = True
            elif physical in ("int32", "int64"):
                standard = True
    if re.search(r"repeated group bag \{|\barray_element\b|repeated \w+ array;", s):
        legacy = True
    elif re.search(r"repeated group list \{", s):
        standard = True
    return "legacy" if legacy else ("standard" if standard else None)


def spark_codec_name(fmt: str, codec: str | None) -> str | None:
    """Our detected codec -> the ``compression`` option of Spark's writer."""
    if codec is None:
        return None
    c = codec.lower()
    if fmt == "parquet":
        return {"uncompressed": "none"}.get(c, c)
    if fmt == "orc":
        return {"none": "none", "zlib": "zlib", "snappy": "snappy", "lzo": "lzo", "lz4": "lz4", "zstd": "zstd"}.get(c, c)
    return c


def payload_fraction(spark: Any, fmt: str, files: list[tuple[str, int]], sample: int = 8) -> float:
    """Share of the bytes of existing files that is row data proper, from the
    footers of up to ``sample`` files spread over the list: Parquet column
    chunks, ORC stripe data, without footers, page and stripe indexes (a
    merged file carries those once). The bytes the same rows need once
    merged, per input byte, to size the output files; 1.0 when it cannot
    tell. Dictionaries are counted in full: whether a merged column keeps
    its dictionary (shrinks) or falls back to plain values (does not)
    cannot be told from the footers."""
    if not files or fmt not in ("parquet", "orc"):
        return 1.0
    step = max(1, len(files) // sample)
    picked = files[::step][:sample]
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    total = payload = 0
    try:
        for uri, size in picked:
            path = _jpath(spark, uri)
            total += size
            if fmt == "parquet":
                reader = _parquet_reader(spark, path, conf)
                try:
                    payload += _parquet_payload(reader)
                finally:
                    reader.close()
            else:
                orc = java_class(jvm, "org.apache.orc.OrcFile")
                reader = orc.createReader(path, orc.readerOptions(conf))
                try:
                    stripes = reader.getStripes()
                    payload += sum(int(stripes.get(i).getDataLength()) for i in range(stripes.size()))
                finally:
                    reader.close()
    except Exception as exc:  # noqa: BLE001 - an estimate only: fall back to the raw sizes
        log.debug("payload estimate failed: %s", exc)
        return 1.0
    return payload / total if total else 1.0


def _parquet_payload(reader: Any) -> int:
    """The bytes of a Parquet file's column chunks (what merged rows keep):
    each row group's ``getCompressedSize`` (their sum; Parquet 1.12 on, every
    supported Spark line), one gateway call a row group."""
    blocks = reader.getFooter().getBlocks()
    return sum(int(blocks.get(i).getCompressedSize()) for i in range(blocks.size()))


def input_format_rows(spark: Any, input_format: str, uris: list[str]) -> int:
    """Count records of files through the table's own InputFormat (how Hive
    itself reads text and Avro): a scan, done in the JVM. Files, not their
    directory: input formats skip a hidden input directory entirely."""
    if not uris:
        return 0
    jvm = spark._jvm
    cls = java_class(jvm, "java.lang.Class").forName
    ifc = cls(input_format, True, java_class(jvm, "java.lang.Thread").currentThread().getContextClassLoader())
    writable = cls("org.apache.hadoop.io.Writable")
    rdd = spark._jsc.hadoopFile(",".join(uris), ifc, writable, writable)
    return int(rdd.count())
