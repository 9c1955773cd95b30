"""``sort_by: zorder(a, b)``: the rows of a unit ordered along a Z-order
curve over up to four columns, so that each written file covers a compact
box of their values and the min/max statistics of Parquet and ORC files
skip files for a filter on any of the columns, not only the first
(Delta ``OPTIMIZE ... ZORDER BY``, Iceberg ``sort_order => 'zorder(a,b)'``,
Kyuubi ``OPTIMIZE ... ZORDER BY``).

Built from Spark's own expressions only (no Python UDF, no extra jar):

1. each column's value becomes an order-preserving double (``order_key``):
   numbers as they are (NaN after every number), booleans 0/1, dates as
   days and timestamps as microseconds since the epoch, strings by their
   first 7 UTF-8 bytes read as a number (Spark compares strings by bytes);
2. one aggregate pass, reading only these columns (Parquet and ORC are
   columnar, so it reads a fraction of the unit's bytes), computes
   ``2**BITS - 1`` approximate percentiles of each key
   (``percentile_approx``): the bucket boundaries;
3. each row's bucket of each column (``rank``, 0 .. ``2**BITS - 1``) is found
   by a branch-free binary search over the boundaries (``BITS`` steps; a
   NULL is bucket 0, first), so skewed values still spread over all buckets;
4. the buckets' bits are interleaved into one non-negative long (``plan``:
   which bit of which column goes where, as data; ``interleave`` is the
   same mapping in Python, for the tests);
5. the rows are range-partitioned on it into the planned number of files
   and sorted by it within each (``repartitionByRange`` + ``sortWithinPartitions``),
   then the helper columns are dropped: the rows written are the unit's
   rows, so verification (row counts, content checksum) is unchanged.

Cost over a linear ``sort_by``: the percentile pass (a column-pruned read of
the Z-order columns), the range partitioner's sampling job (Spark reads the
unit once more to sample the z-values, as Delta's ZORDER BY does) and the
shuffle itself; a linear sort sorts each read task's rows in place.
"""

from __future__ import annotations

from typing import Any

from ..policy.names import quote_column

BITS = 10  # buckets per column: 2**BITS (at most 4 columns: 40 bits of the long)
ACCURACY = 10000  # percentile_approx's accuracy: relative rank error 1/ACCURACY
Z = "__lk_z"
_RANK = "__lk_zr"


def plan(columns: int, bits: int = BITS) -> list[tuple[int, int, int]]:
    """The bit interleaving as data: (column, bit of its bucket, bit of the
    z-value), most significant first. Bit ``b`` of column ``j`` of ``k``
    goes to bit ``b * k + (k - 1 - j)``: the first column's bit leads each
    group, so on ties of the higher bits the first column decides first."""
    if not 1 <= columns or columns * bits > 63:
        raise ValueError(f"{columns} columns of {bits} bits do not fit a non-negative long")
    return [(j, b, b * columns + (columns - 1 - j)) for b in reversed(range(bits)) for j in range(columns)]


def interleave(ranks: list[int], bits: int = BITS) -> int:
    """The z-value of one row's buckets (``plan`` applied in Python)."""
    z = 0
    for j, b, target in plan(len(ranks), bits):
        z |= ((ranks[j] >> b) & 1) << target
    return z


def order_key(name: str, typ: str) -> Any:
    """An order-preserving double of the column (NULL stays NULL)."""
    from pyspark.sql import functions as F

    c = F.col(quote_column(name))
    t = typ.lower()
    if t.startswith("string") or t.startswith("varchar") or t.startswith("char"):
        # the first 7 bytes, zero-padded, as an unsigned number below 2**56
        head = F.rpad(F.substring(F.hex(F.encode(c, "UTF-8")), 1, 14), 14, "0")
        return F.conv(head, 16, 10).cast("long").cast("double")
    if t.startswith("timestamp"):  # SQL functions since Spark 3.1 (their Python names since 3.5)
        return F.expr(f"unix_micros(CAST({quote_column(name)} AS TIMESTAMP))").cast("double")
    if t.startswith("date"):
        return F.expr(f"unix_date({quote_column(name)})").cast("double")
    if t.startswith("boolean"):
        return F.when(c, F.lit(1.0)).when(~c, F.lit(0.0))
    if t.startswith(("float", "double")):
        return F.nanvl(c.cast("double"), F.lit(float("inf")))  # NaN sorts after every number, as Spark sorts it
    return c.cast("double")


def boundaries(df: Any, keys: list[Any], bits: int = BITS) -> list[list[float]]:
    """Each key's ``2**bits - 1`` bucket boundaries (ascending, may repeat)
    from one aggregate pass over ``df`` (which reads only the keys' columns);
    an empty list for a key that is NULL on every row."""
    from pyspark.sql import functions as F

    n = 2 ** bits
    fractions = [i / n for i in range(1, n)]
    row = df.select(*[F.percentile_approx(k, fractions, ACCURACY).alias(f"q{i}")
                      for i, k in enumerate(keys)]).collect()[0]
    return [sorted(float(v) for v in row[i]) if row[i] else [] for i in range(len(keys))]


def with_z(df: Any, columns: list[tuple[str, str]], bits: int = BITS) -> Any:
    """``df`` with the z-value column ``Z`` (a non-negative long), computed
    from the percentiles of ``columns`` ((name, type) pairs) in ``df``."""
    from pyspark.sql import functions as F

    keys = [order_key(n, t) for n, t in columns]
    bounds = boundaries(df, keys, bits)
    names = [f"{_RANK}{j}" for j in range(len(columns))]
    # the boundaries as double literals (NaN and the infinities included), never as SQL text
    arrays = [F.array(*[F.lit(float(v)) for v in b]) if b else None for b in bounds]
    out = df.select("*", *[(k if b else F.lit(None).cast("double")).alias(f"{_RANK}k{j}")
                           for j, (k, b) in enumerate(zip(keys, bounds))],
                    *[F.lit(0).cast("long").alias(n) for n in names])
    # Binary search, one projection per step (a step refers to the previous
    # bucket twice, so one expression would double with every step): after
    # the steps, the bucket is the number of boundaries below the key.
    for step in (2 ** s for s in reversed(range(bits))):
        steps = []
        for j, arr in enumerate(arrays):
            r = F.col(names[j])
            if arr is not None:
                below = F.element_at(arr, (r + step).cast("int")) < F.col(quote_column(f"{_RANK}k{j}"))
                r = r + F.when(below, F.lit(step).cast("long")).otherwise(F.lit(0).cast("long"))
            steps.append(r.alias(names[j]))
        df_cols = [F.col(quote_column(c)) for c in out.columns if c not in names]
        out = out.select(*df_cols, *steps)
    k = len(columns)
    z = F.lit(0).cast("long")
    for j, b, target in plan(k, bits):
        bit = F.shiftright(F.col(names[j]), b).bitwiseAND(F.lit(1).cast("long"))
        z = z.bitwiseOR(F.shiftleft(bit, target))
    return out.select(*[F.col(quote_column(c)) for c in df.columns], z.alias(Z))


def zorder(df: Any, columns: list[tuple[str, str]], files: int, bits: int = BITS) -> Any:
    """``df``'s rows range-partitioned into ``files`` partitions by their
    z-value and sorted by it within each; the helper column dropped."""
    from pyspark.sql import functions as F

    zdf = with_z(df, columns, bits)
    return zdf.repartitionByRange(max(1, files), F.col(Z)).sortWithinPartitions(F.col(Z)).drop(Z)
