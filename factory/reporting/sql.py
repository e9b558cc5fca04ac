"""SQL helpers the report's sections share: rows as dicts, histograms binned in DuckDB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store import Store


@dataclass(frozen=True)
class Bin:
    lo: float
    hi: float  # exclusive, except in the last bin
    count: int
    integer: bool = False

    @property
    def label(self) -> str:
        if self.integer:
            last = int(self.hi) - 1
            return f"{int(self.lo)}" if last <= self.lo else f"{int(self.lo)}–{last}"
        return f"{self.lo:.3g}–{self.hi:.3g}"


def dict_rows(store: Store, sql: str, names: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    """Rows of `sql` as dicts keyed by `names` (space-separated, one per selected column)."""
    keys = names.split()
    return [dict(zip(keys, row, strict=True)) for row in store.query(sql, params)]


def int_histogram(store: Store, values_sql: str, max_bins: int = 20) -> list[Bin]:
    """Bins of equal integer width over the column `x` of `values_sql`; empty bins kept as zero."""
    rows = store.query(
        f"""
        WITH v AS (SELECT CAST(x AS BIGINT) AS x FROM ({values_sql}) WHERE x IS NOT NULL),
        w AS (SELECT min(x) AS lo, greatest(CAST(ceil((max(x) - min(x) + 1) / {int(max_bins)}) AS BIGINT), 1) AS width,
                     max(x) AS hi FROM v HAVING count(*) > 0),
        k AS (SELECT lo, width, CAST((hi - lo) // width + 1 AS BIGINT) AS n FROM w),
        b AS (SELECT CAST((x - lo) // width AS BIGINT) AS bin FROM v, k),
        edges AS (SELECT unnest(range(n)) AS i FROM k)
        SELECT lo + i * width, lo + (i + 1) * width, count(b.bin)
        FROM edges CROSS JOIN k LEFT JOIN b ON b.bin = edges.i
        GROUP BY i, lo, width ORDER BY i
        """
    )
    return [Bin(lo, hi, n, integer=True) for lo, hi, n in rows]


def float_histogram(
    store: Store, values_sql: str, bins: int = 20, lo: float | None = None, hi: float | None = None
) -> list[Bin]:
    """`bins` equal-width bins over the column `x` of `values_sql`, between lo and hi (default: the data's range)."""
    lo_sql = "min(x)" if lo is None else repr(float(lo))
    hi_sql = "max(x)" if hi is None else repr(float(hi))
    rows = store.query(
        f"""
        WITH v AS (SELECT CAST(x AS DOUBLE) AS x FROM ({values_sql}) WHERE x IS NOT NULL),
        k AS (SELECT {lo_sql} AS lo, CASE WHEN {hi_sql} > {lo_sql} THEN ({hi_sql} - {lo_sql}) / {int(bins)}
                                          ELSE 1.0 END AS width,
                     CASE WHEN {hi_sql} > {lo_sql} THEN {int(bins)} ELSE 1 END AS n
              FROM v HAVING count(*) > 0),
        -- the epsilon keeps a value on an edge (0.3 of 0..1 in tenths) out of the bin below
        b AS (SELECT least(greatest(CAST(floor((x - lo) / width + 1e-9) AS BIGINT), 0), n - 1) AS bin FROM v, k),
        edges AS (SELECT unnest(range(n)) AS i FROM k)
        SELECT lo + i * width, lo + (i + 1) * width, count(b.bin)
        FROM edges CROSS JOIN k LEFT JOIN b ON b.bin = edges.i
        GROUP BY i, lo, width ORDER BY i
        """
    )
    return [Bin(lo_, hi_, n) for lo_, hi_, n in rows]
