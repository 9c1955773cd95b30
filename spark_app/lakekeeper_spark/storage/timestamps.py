"""Timestamps as the files store them, which Spark does not carry whole.

Spark holds a timestamp in microseconds. Parquet INT96 and ORC store
nanoseconds, text holds up to nine digits of a second: Hive and Impala write
them. Spark reads ``...123456789`` as ``...123456`` and writes that back, and
a checksum taken on values as Spark decodes them cannot see the loss. And a
Parquet timestamp is one of several physical types (INT96, INT64
``TIMESTAMP(MILLIS|MICROS|NANOS)``) that readers caring about the physical
type (Impala, Hive 3) read differently.

- ``parquet_timestamp_types`` the physical type of each timestamp column of a
  Parquet schema's text (pure)
- ``sub_micro`` whether the fraction of a timestamp's text has digits below a
  microsecond that are not zero (pure; the regex the Spark checks use too)
- ``int96_read_as_written`` whether Hive reads a Parquet file's INT96 values
  as they were written, without converting them from UTC to its time zone
  (a file parquet-mr did not write: Impala's, parquet-cpp's), by the writer
  its footer names (pure)
- ``int96_sub_micro`` a Parquet file's INT96 values below a microsecond, read
  from the raw pages (parquet-mr's page reader on the driver: Spark reads INT96
  only as a timestamp, already truncated). Only the INT96 column chunks are
  read; a dictionary-encoded chunk is decided by its dictionary page alone.
"""

from __future__ import annotations

import datetime
import re
import struct
from typing import Any

# Spark's spark.sql.parquet.outputTimestampType values, and what Spark cannot write.
INT96 = "INT96"
MICROS = "TIMESTAMP_MICROS"
MILLIS = "TIMESTAMP_MILLIS"
NANOS = "TIMESTAMP_NANOS"
# An INT64 timestamp with isAdjustedToUTC=false (Impala's, pyarrow's without a time zone): Spark
# writes a TIMESTAMP column with isAdjustedToUTC=true whatever outputTimestampType says.
LOCAL_SUFFIX = " (isAdjustedToUTC=false)"

# A leaf of parquet-mr's schema text: "optional int64 ts (TIMESTAMP(MICROS,true)) = 3;"
_LEAF = re.compile(r"^\s*(?:required|optional|repeated)\s+(int96|int64)\s+([^\s;(]+)([^;]*);", re.M)

# Digits below a microsecond that are not zero, in a timestamp's text ("10:00:00.123456780").
SUB_MICRO_REGEX = "[0-9]:[0-9]{2}[.][0-9]{6}[0-9]*[1-9]"
_SUB_MICRO = re.compile(SUB_MICRO_REGEX)


def parquet_timestamp_types(schema: str) -> dict[str, str]:
    """Leaf name -> physical timestamp type (``INT96``, ``TIMESTAMP_MICROS``,
    ``TIMESTAMP_MILLIS``, ``TIMESTAMP_NANOS``; INT64 ones with
    isAdjustedToUTC=false get ``LOCAL_SUFFIX``) of every timestamp leaf of a
    Parquet schema's text (``MessageType.toString``). INT96 is a timestamp
    whatever its annotation (it holds nothing else)."""
    out: dict[str, str] = {}
    for physical, name, rest in _LEAF.findall(schema):
        if physical == "int96":
            out[name] = INT96
            continue
        r = rest.upper()
        if "TIMESTAMP" not in r:
            continue
        unit = NANOS if "NANOS" in r else (MILLIS if "MILLIS" in r else MICROS)
        local = re.search(r"TIMESTAMP\(\s*\w+\s*,\s*FALSE\s*\)", r) is not None
        out[name] = unit + (LOCAL_SUFFIX if local else "")
    return out


# Hive (2.x, 3.x: ``hive.parquet.timestamp.skip.conversion``, default true) converts INT96 values
# from UTC to its JVM's time zone only in files whose footer's created_by starts with this
# (ParquetRecordReaderBase); Spark and Hive write through parquet-mr.
PARQUET_MR = "parquet-mr"


def int96_read_as_written(created_by: str | None) -> bool:
    """Whether Hive reads the INT96 values of a Parquet file written by
    ``created_by`` (its footer's writer) without converting them from UTC:
    true for every writer but parquet-mr (Impala, parquet-cpp/pyarrow). A
    copy written by Spark (parquet-mr) of such a file is converted: every
    value shifts by the Hive server's UTC offset."""
    return not (created_by or "").startswith(PARQUET_MR)


def sub_micro(text: str | None) -> bool:
    return bool(text) and _SUB_MICRO.search(text or "") is not None


def int96_text(nanos: int, julian_day: int) -> str:
    """An INT96 value as ``yyyy-MM-dd HH:mm:ss.fffffffff`` (UTC)."""
    day = datetime.date(1970, 1, 1) + datetime.timedelta(days=julian_day - 2440588)
    secs, frac = divmod(nanos, 1_000_000_000)
    h, rem = divmod(secs, 3600)
    return f"{day.isoformat()} {h:02d}:{rem // 60:02d}:{rem % 60:02d}.{frac:09d}"


def first_sub_micro(values: bytes) -> str | None:
    """The first of PLAIN-encoded INT96 values (12 bytes each: nanoseconds of
    the day, little-endian int64, then the Julian day, int32) with
    nanoseconds that are not whole microseconds, as text; None if none."""
    n = len(values) // 12
    for i, (nanos, day) in enumerate(struct.iter_unpack("<qi", values[:n * 12])):
        if nanos % 1000:
            return int96_text(nanos, day)
    return None


def _bit_width(max_level: int) -> int:
    return max_level.bit_length()


def _skip_levels(data: bytes, pos: int, encoding: str, max_level: int, count: int) -> int:
    """The position after one level section of a v1 data page."""
    if max_level == 0:
        return pos
    if encoding == "RLE":
        return pos + 4 + int.from_bytes(data[pos:pos + 4], "little")
    if encoding == "BIT_PACKED":
        return pos + (_bit_width(max_level) * count + 7) // 8
    raise ValueError(f"level encoding {encoding}")


def prune_schema(schema: str, keep: set[str]) -> str | None:
    """The schema text with only the leaves named in ``keep`` (INT96 leaves)
    and the groups that hold them; None when the text is not the expected
    shape (the caller then reads the whole schema)."""
    lines = schema.strip().splitlines()
    if not lines or not lines[0].startswith("message") or lines[-1].strip() != "}":
        return None
    stack: list[list[str]] = [[]]
    heads: list[str] = []
    for line in lines[1:-1]:
        s = line.strip()
        if s.endswith("{"):
            heads.append(s)
            stack.append([])
        elif s == "}":
            if not heads:
                return None
            body, head = stack.pop(), heads.pop()
            if body:
                stack[-1].append(head + "\n" + "\n".join(body) + "\n}")
        elif s.endswith(";"):
            m = _LEAF.match(s)
            if m and m.group(1) == "int96" and m.group(2) in keep:
                stack[-1].append(s)
        elif s:
            return None
    if heads or not stack[0]:
        return None
    return lines[0].strip() + "\n" + "\n".join(stack[0]) + "\n}"


def int96_sub_micro(spark: Any, reader: Any) -> tuple[str, str] | None:
    """(column path, example value) of the first INT96 value that is not a
    whole microsecond in the Parquet file of ``reader`` (a
    ``ParquetFileReader``: ``formats.parquet_reader_at``, closed here); None
    if there is none. Reads the INT96 column chunks only, page by page, on
    the driver; a dictionary-encoded chunk by its dictionary (the values it
    holds)."""
    from ..compat.jvm import java_class

    try:
        schema = reader.getFooter().getFileMetaData().getSchema()
        text = str(schema.toString())
        leaves = {name for name, t in parquet_timestamp_types(text).items() if t == INT96}
        if not leaves:
            return None
        pruned = prune_schema(text, leaves)
        if pruned is not None:
            schema = java_class(spark._jvm, "org.apache.parquet.schema.MessageTypeParser").parseMessageType(pruned)
            reader.setRequestedSchema(schema)
        columns = [c for c in schema.getColumns()
                   if str(c.getPrimitiveType().getPrimitiveTypeName().name()) == "INT96"]
        store = reader.readNextRowGroup()
        while store is not None:
            for c in columns:
                found = _chunk_sub_micro(store.getPageReader(c), c)
                if found is not None:
                    return ".".join(str(p) for p in c.getPath()), found
            store = reader.readNextRowGroup()
        return None
    finally:
        reader.close()


def _chunk_sub_micro(pages: Any, column: Any) -> str | None:
    dictionary = pages.readDictionaryPage()
    if dictionary is not None:
        found = first_sub_micro(bytes(dictionary.getBytes().toByteArray()))
        if found is not None:
            return found
    page = pages.readPage()
    while page is not None:
        kind = str(page.getClass().getSimpleName())
        if kind == "DataPageV1":
            if not page.getValueEncoding().usesDictionary():
                data = bytes(page.getBytes().toByteArray())
                count = int(page.getValueCount())
                pos = _skip_levels(data, 0, str(page.getRlEncoding().name()), int(column.getMaxRepetitionLevel()),
                                   count)
                pos = _skip_levels(data, pos, str(page.getDlEncoding().name()), int(column.getMaxDefinitionLevel()),
                                   count)
                found = first_sub_micro(data[pos:])
                if found is not None:
                    return found
        elif kind == "DataPageV2":
            if not page.getDataEncoding().usesDictionary():
                found = first_sub_micro(bytes(page.getData().toByteArray()))
                if found is not None:
                    return found
        else:
            raise ValueError(f"unknown Parquet page {kind}")
        page = pages.readPage()
    return None
