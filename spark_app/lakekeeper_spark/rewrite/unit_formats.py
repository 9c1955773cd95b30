"""What a rewrite must keep of each unit's files, read from that unit's own
files: the codec, the Parquet layout (legacy or standard), the Parquet
timestamp type (INT96, INT64 TIMESTAMP_MICROS or TIMESTAMP_MILLIS: written
with ``spark.sql.parquet.outputTimestampType`` set to it) and the Avro
writer schema. One table's units differ: a table's compression property
changes over the years, a partition is written by Hive and the next by
Spark, an Avro schema evolves. So each unit is written with what its own
files have, never with the first file of the table.

A unit's files may also disagree among themselves:

- **codec**: values are the same whatever the codec (every reader
  decompresses by the file's own metadata or name), and such units are
  common (the files of a partition written before and after a table's
  compression property changed). The unit is written with the codec of its
  newest file (modification time, then name): what its writers use now.
  The result's ``notes`` say which codecs were found.
- **Parquet layout**: readers that read only the legacy layout (Hive 2 and
  older read decimals only as fixed_len_byte_array) read some of the files
  and not the others; one rewrite writes one layout, so one of them would
  change what such a reader sees. Refused (``mixed_files``).
- **Parquet timestamp type**: readers that read the physical type (Impala,
  Hive 3 with ``hive.parquet.timestamp.*``) convert INT96 and INT64
  timestamps differently; one rewrite writes one type. Refused
  (``mixed_files``).
- **Avro writer schema**: a rewrite writes one writer schema for every
  row; the files written with another one would be read through a schema
  they were not written with. Refused (``mixed_files``).

Cost: one footer (Parquet, ORC) or header (Avro) per *write job* of the
unit's files (``schema_drift.writer_key``: the files of one Spark job share
codec, layout and schema), else per file; none for text (the codec is in
the name). The same reads give the schema drift check its columns
(``columns``), so no file is read twice; the reads of all units run on up
to 8 threads when there are many.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..report.model import Decision, FileEntry, TableInfo, Unit
from .schema_drift import writer_key
from ..storage.timestamps import INT96, MICROS, MILLIS

log = logging.getLogger(__name__)

CODE = "mixed_files"
# The Parquet timestamp types Spark writes (spark.sql.parquet.outputTimestampType).
WRITABLE_TIMESTAMPS = (INT96, MICROS, MILLIS)


def representatives(unit: Unit) -> list[tuple[FileEntry, list[FileEntry]]]:
    """The files of ``unit`` to rewrite, grouped by write job
    (``writer_key``): (the group's first file, every file of the group), in
    listing order. One file per group tells the whole group's format facts."""
    groups: dict[str, list[FileEntry]] = {}
    for f in unit.rewrite_files:
        groups.setdefault(writer_key(f.name), []).append(f)
    return [(files[0], files) for files in groups.values()]


def read_facts(fmt: str, units: list[Unit], read: Callable[[str], dict[str, Any]],
               threads: int = 8) -> dict[str, dict[str, Any]]:
    """URI -> ``read(uri)`` (``formats.file_facts``) of one file per write
    job of every unit, on up to ``threads`` threads when there are many
    (each thread its own gateway connection: HDFS latency per footer)."""
    uris = []
    for u in units:
        base = u.location.rstrip("/")
        uris += [f"{base}/{first.name}" for first, _group in representatives(u)]
    workers = max(1, min(threads, len(uris) // 8))
    if workers == 1:
        return {uri: read(uri) for uri in uris}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakekeeper-footer") as pool:
        return dict(zip(uris, pool.map(read, uris)))


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _avro_difference(a: str, b: str) -> str:
    """What differs between two Avro writer schemas, briefly."""
    try:
        sa, sb = json.loads(a), json.loads(b)
    except ValueError:
        return "the schemas differ"
    if not (isinstance(sa, dict) and isinstance(sb, dict)):
        return "the schemas differ"
    out = []
    for key in ("name", "namespace"):
        if sa.get(key) != sb.get(key):
            out.append(f"record {key} {sa.get(key)!r} / {sb.get(key)!r}")
    fa = {f.get("name"): f for f in sa.get("fields") or [] if isinstance(f, dict)}
    fb = {f.get("name"): f for f in sb.get("fields") or [] if isinstance(f, dict)}
    only_a, only_b = [n for n in fa if n not in fb], [n for n in fb if n not in fa]
    if only_a:
        out.append(f"field(s) {', '.join(map(str, only_a))} only in the first")
    if only_b:
        out.append(f"field(s) {', '.join(map(str, only_b))} only in the second")
    for n in fa:
        if n in fb and fa[n] != fb[n]:
            out.append(f"field {n}: {json.dumps(fa[n], sort_keys=True)} / {json.dumps(fb[n], sort_keys=True)}")
    if [n for n in fa if n in fb] != [n for n in fb if n in fa]:
        out.append("the fields are in another order")
    return "; ".join(out[:4]) + ("; ..." if len(out) > 4 else "") if out else "the schemas differ"


def unit_codec(fmt: str, unit: Unit, facts: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The codec dict ``unit`` is written with (``codec``; Parquet
    ``legacy``; Avro ``schema``) and notes for the result, from ``facts``
    (``read_facts``). Raises ``MixedFiles`` when its files disagree on the
    Parquet layout or the Avro writer schema."""
    base = unit.location.rstrip("/")
    groups = [(facts[f"{base}/{first.name}"], first, files) for first, files in representatives(unit)]
    if not groups:
        return {"codec": None}, []
    newest_file = max((f for _facts, _first, files in groups for f in files), key=lambda f: (f.mtime, f.name))
    newest = next(g for g in groups if newest_file in g[2])
    out: dict[str, Any] = {}
    notes: list[str] = []
    if fmt == "parquet":
        layouts: dict[str, list[str]] = {}
        for facts_, first, files in groups:
            if facts_.get("layout"):
                layouts.setdefault(facts_["layout"], []).extend(f.name for f in files)
        if len(layouts) > 1:
            legacy, standard = layouts["legacy"], layouts["standard"]
            raise MixedFiles(
                f"its files are in both Parquet layouts: legacy (decimals as fixed_len_byte_array, lists as "
                f"bag/array groups: Hive, Impala, Spark with writeLegacyFormat) in {_files(len(legacy))} "
                f"(e.g. {legacy[0]}), standard in {_files(len(standard))} (e.g. {standard[0]}); a rewrite writes "
                f"one layout, so readers that read only the legacy one (Hive 2 and older) would see other rows; "
                f"nothing was written")
        out["legacy"] = "legacy" in layouts
        stamps: dict[str, list[str]] = {}
        for facts_, first, files in groups:
            for t in facts_.get("timestamps") or ():
                if t in WRITABLE_TIMESTAMPS:  # the others are refused by values.py (unsupported_values)
                    stamps.setdefault(t, []).extend(f.name for f in files)
        if len(stamps) > 1:
            found = "; ".join(f"{t} in {_files(len(names))} (e.g. {names[0]})" for t, names in sorted(stamps.items()))
            raise MixedFiles(
                f"its timestamps are stored in {len(stamps)} Parquet physical types ({found}); a rewrite writes "
                f"one, so readers that read the physical type (Impala, Hive 3) would see other values for some "
                f"rows; nothing was written")
        if stamps:
            out["timestamp_type"] = next(iter(stamps))
    if fmt == "avro":
        schemas: dict[str, tuple[str, int]] = {}
        for facts_, first, files in groups:
            name, count = schemas.get(facts_["schema"], (first.name, 0))
            schemas[facts_["schema"]] = (name, count + len(files))
        if len(schemas) > 1:
            (sa, (fa, na)), (sb, (fb, nb)) = list(schemas.items())[:2]
            raise MixedFiles(
                f"its files were written with {len(schemas)} different Avro writer schemas ({_avro_difference(sa, sb)}; "
                f"e.g. {fa} ({_files(na)}) and {fb} ({_files(nb)})); a rewrite writes every row with one writer "
                f"schema, so rows would be read through a schema they were not written with; nothing was written")
        out["schema"] = newest[0]["schema"]
    codecs: dict[Any, int] = {}
    for facts_, _first, files in groups:
        if facts_.get("codec") is not None or fmt != "parquet":  # a Parquet file without row groups has no codec
            codecs[facts_.get("codec")] = codecs.get(facts_.get("codec"), 0) + len(files)
    codec = newest[0].get("codec")
    if codec is None and fmt == "parquet":  # the newest file has no row groups: the newest that has one
        voting = [(f, facts_) for facts_, _first, files in groups if facts_.get("codec") for f in files]
        codec = max(voting, key=lambda x: (x[0].mtime, x[0].name))[1]["codec"] if voting else "uncompressed"
    out["codec"] = codec
    if len(codecs) > 1:
        found = ", ".join(f"{c or 'none'} ({_files(n)})" for c, n in sorted(codecs.items(), key=lambda x: str(x[0])))
        notes.append(f"its files have different codecs: {found}; written as {codec or 'none'}, the codec of its "
                     f"newest file ({newest_file.name}); values are the same whatever the codec")
    return out, notes


class MixedFiles(Exception):
    """A unit whose files disagree on what a rewrite must keep."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def resolve_units(info: TableInfo, units: list[Unit],
                  facts: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Each unit to compact: its codec dict (by spec) and notes; a unit
    whose files disagree is refused (``mixed_files``), nothing of it
    touched."""
    codecs: dict[str, dict[str, Any]] = {}
    notes: dict[str, list[str]] = {}
    for u in units:
        if u.decision.action != "compact":
            continue
        try:
            codecs[u.spec], found = unit_codec(info.format or "", u, facts)
        except MixedFiles as exc:
            log.warning("%s %s: %s: %s", info.full_name, u.spec or "(table)", CODE, exc.reason)
            u.decision = Decision("refuse", exc.reason, u.stats.files, u.decision.rule, code=CODE)
            continue
        if found:
            notes[u.spec] = found
    return codecs, notes
