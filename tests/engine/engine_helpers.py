"""Helpers shared by the engine tests (file snapshots, table factory)."""

from __future__ import annotations

import hashlib
from pathlib import Path

def snapshot(path: Path) -> dict[str, str]:
    """Relative path -> sha256 of every visible data file under ``path``."""
    out = {}
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path)
        if p.is_file() and not any(part.startswith((".", "_")) for part in rel.parts):
            out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def hidden_entries(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob(".*") if not p.name.endswith(".crc"))


def data_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_")))


def make_table(spark, warehouse: Path, name: str, fmt: str = "parquet", rows: int = 2000, files: int = 50,
               partitions: dict[str, int] | None = None, props: dict[str, str] | None = None,
               row_format: str = "") -> Path:
    """Create EXTERNAL table lk.<name> with small files. ``partitions``: value of ``dt`` -> files."""
    loc = warehouse / name
    spark.sql(f"DROP TABLE IF EXISTS lk.{name}")
    tbl = ""
    if props:
        tbl = "TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")"
    part = "PARTITIONED BY (dt STRING)" if partitions else ""
    spark.sql(
        f"CREATE EXTERNAL TABLE lk.{name} (id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP) {part} "
        f"{row_format} STORED AS {fmt} LOCATION 'file://{loc}' {tbl}"
    )
    body = ["id", "concat('name-', id) AS name", "CAST(id * 1.5 AS DECIMAL(12,2)) AS amount",
            "timestamp_seconds(1700000000 + id) AS ts"]
    if partitions:
        start = 0
        for dt, nfiles in partitions.items():
            spark.range(start, start + rows).selectExpr(*body).repartition(nfiles).createOrReplaceTempView("lk_src")
            spark.sql(f"INSERT INTO lk.{name} PARTITION (dt='{dt}') SELECT * FROM lk_src")
            start += rows
    else:
        spark.range(0, rows).selectExpr(*body).repartition(files).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO lk.{name} SELECT * FROM lk_src")
    return loc


def same_rows(spark, left, right) -> bool:
    return left.exceptAll(right).count() == 0 and right.exceptAll(left).count() == 0
