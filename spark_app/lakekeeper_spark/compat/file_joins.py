"""Joining Parquet or ORC files of one write without decoding a row: their
ORC stripes or Parquet row groups are copied as they are, with statistics
and indexes, behind one new footer.

- ORC: ``OrcFile.mergeFiles`` (ORC 1.5+, every supported Spark line).
- Parquet: ``ParquetRewriter`` (parquet-mr 1.13+, Spark 3.5 and 4.x), which
  also keeps the writer's key-value metadata (e.g. the Spark schema).
  Spark 3.3 and 3.4 ship parquet-mr 1.12, which has none: ``join_support``
  says so, and the unit is written in whole files instead.
"""

from __future__ import annotations

from typing import Any

from ..report.errors import LakekeeperError
from .jvm import java_class


def _has_class(spark: Any, name: str) -> bool:
    jvm = spark._jvm  # pylint: disable=protected-access
    try:
        loader = java_class(jvm, "java.lang.Thread").currentThread().getContextClassLoader()
        java_class(jvm, "java.lang.Class").forName(name, False, loader)
        return True
    except Exception:  # noqa: BLE001 - ClassNotFoundException through py4j
        return False


_PARQUET_REWRITER = "org.apache.parquet.hadoop.rewrite.ParquetRewriter"
_ORC_FILE = "org.apache.orc.OrcFile"
_SUPPORT: dict[tuple[int, str], tuple[bool, str | None]] = {}


def join_support(spark: Any, fmt: str) -> tuple[bool, str | None]:
    """(whether files of ``fmt`` can be joined here, why not)."""
    key = (id(spark.sparkContext), fmt)
    if key not in _SUPPORT:
        if fmt == "parquet":
            ok = _has_class(spark, _PARQUET_REWRITER)
            why = None if ok else ("this Spark's parquet-mr has no ParquetRewriter (needs parquet-mr 1.13+, "
                                   "Spark 3.5+): written in whole files")
        elif fmt == "orc":
            ok = _has_class(spark, _ORC_FILE)
            why = None if ok else "ORC's OrcFile is not on the classpath: written in whole files"
        else:
            ok, why = False, f"{fmt} files are never joined"
        _SUPPORT[key] = (ok, why)
    return _SUPPORT[key]


def _jpath(spark: Any, uri: str) -> Any:
    return java_class(spark._jvm, "org.apache.hadoop.fs.Path")(uri)  # pylint: disable=protected-access


def join_files(spark: Any, fmt: str, inputs: list[str], output: str) -> None:
    """Write ``output`` as the concatenation of ``inputs`` (files of one
    write: same schema, codec and writer). Raises ``LakekeeperError`` when an
    input could not be joined; the caller's verification then checks the
    rows."""
    ok, why = join_support(spark, fmt)
    if not ok:
        raise LakekeeperError("write_failed", f"cannot join {fmt} files: {why}")
    jvm = spark._jvm  # pylint: disable=protected-access
    conf = spark._jsc.hadoopConfiguration()  # pylint: disable=protected-access
    paths = java_class(jvm, "java.util.ArrayList")()
    for uri in inputs:
        paths.add(_jpath(spark, uri))
    if fmt == "orc":
        orc = java_class(jvm, "org.apache.orc.OrcFile")
        joined = orc.mergeFiles(_jpath(spark, output), orc.writerOptions(conf), paths)
        if int(joined.size()) != len(inputs):  # mergeFiles skips files it finds incompatible
            done = {str(joined.get(i).toString()) for i in range(joined.size())}
            left = [u for u in inputs if str(_jpath(spark, u).toString()) not in done]
            raise LakekeeperError("write_failed", f"joining the written pieces into {output}: ORC could not "
                                                  f"append {', '.join(left) or 'some pieces'} (incompatible files)")
        return
    options = java_class(jvm, "org.apache.parquet.hadoop.rewrite.RewriteOptions$Builder")(
        conf, paths, _jpath(spark, output)).build()
    rewriter = java_class(jvm, "org.apache.parquet.hadoop.rewrite.ParquetRewriter")(options)
    try:
        rewriter.processBlocks()
    finally:
        rewriter.close()
