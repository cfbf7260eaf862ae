"""Events and distinct visitors per dimension value of a batch's events: pure.

A worker's hot spot: every page view has a value in each of the twelve dimensions, and the
store needs, per minute and per hour, the page views of each value and (per minute) its
distinct visitors. Counting that with Python dictionaries costs a dozen interpreted steps
per page view; here each dimension is one Arrow column and one hash aggregation (Arrow's
C++ ``group_by``) counts all of them, so Python only touches the distinct values. The
same counts serve custom events (:func:`count_values` over event names and properties), and
:func:`sum_values` adds a sum per value (engaged milliseconds of engagement reports).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa


def _arrow() -> tuple[ModuleType, ModuleType]:
    """pyarrow and its compute module, imported on the first count: the web processes import
    this module (through the realtime store's readers) but never count, and pyarrow is a large
    import they would carry for nothing."""
    import pyarrow
    import pyarrow.compute

    return pyarrow, pyarrow.compute


class ValueCount(NamedTuple):
    """The fields of a row of :func:`count_values` (rows are plain tuples in this order)."""

    site: str
    bucket: int  # a minute or an hour since the epoch
    dim: int  # index into the dimension names given
    value: str
    pageviews: int
    visitors: str  # the distinct visitor members, concatenated ("" for hours, and when none)


def count_values(
    sites: Sequence[str],
    minutes: Sequence[int],
    members: Sequence[str | None],
    columns: Sequence[Sequence[str | None]],
) -> tuple[list[tuple[str, int, int, str, int, str]], list[tuple[str, int, int, str, int, str]]]:
    """Per-minute rows (with visitors) and per-hour rows (without), :class:`ValueCount`'s
    fields, of the page views whose
    site, minute and visitor member are ``sites[i]``, ``minutes[i]``, ``members[i]`` and whose
    value in dimension ``d`` is ``columns[d][i]`` (None or "" when absent: not counted).

    Rows of one site, bucket and dimension are adjacent, by page views descending, then value."""
    if not sites:
        return [], []
    pa, pc = _arrow()
    names = sorted(set(sites))
    codes = {name: code for code, name in enumerate(names)}
    n, dims = len(sites), len(columns)
    site_codes = pa.array([codes[s] for s in sites], pa.int32())
    minute_array = pa.array(minutes, pa.int64())
    hours = pc.divide(minute_array, 60)  # integer division: minutes are positive
    values = pa.concat_arrays([pa.array(column, pa.string()) for column in columns])
    table = pa.table(
        {
            "site": pa.concat_arrays([site_codes] * dims),
            "minute": pa.concat_arrays([minute_array] * dims),
            "hour": pa.concat_arrays([hours] * dims),
            "dim": pa.concat_arrays([pa.repeat(pa.scalar(d, pa.int8()), n) for d in range(dims)]),
            "value": values,
            "visitor": pa.concat_arrays([pa.array(members, pa.string())] * dims),
        }
    )
    table = table.filter(pc.and_(pc.is_valid(values), pc.not_equal(values, "")))
    per_minute = table.group_by(["site", "minute", "dim", "value"]).aggregate(
        [("value", "count"), ("visitor", "distinct")]
    )
    per_minute = per_minute.append_column("visitors", pc.binary_join(per_minute["visitor_distinct"], "")).drop_columns(
        ["visitor_distinct"]
    )
    per_hour = table.group_by(["site", "hour", "dim", "value"]).aggregate([("value", "count")])
    return (
        list(_rows(per_minute, "minute", names, lambda t: t["visitors"].to_pylist())),
        list(_rows(per_hour, "hour", names, lambda t: [""] * t.num_rows)),
    )


def _rows(
    table: pa.Table, bucket: str, names: list[str], last: Callable[[pa.Table], list[Any]]
) -> Iterator[tuple[Any, ...]]:
    ordered = table.sort_by(
        [("site", "ascending"), (bucket, "ascending"), ("dim", "ascending"),
         ("value_count", "descending"), ("value", "ascending")]
    )  # fmt: skip
    columns = (
        [names[code] for code in ordered["site"].to_pylist()],
        ordered[bucket].to_pylist(),
        ordered["dim"].to_pylist(),
        ordered["value"].to_pylist(),
        ordered["value_count"].to_pylist(),
        last(ordered),
    )
    return zip(*columns, strict=True)  # plain tuples in ValueCount's order: one object less per row


class ValueSum(NamedTuple):
    """The fields of a row of :func:`sum_values` (rows are plain tuples in this order)."""

    site: str
    bucket: int  # a minute or an hour since the epoch
    dim: int  # index into the dimension names given
    value: str
    count: int  # rows of the value
    amount: int  # the sum of their amounts


def sum_values(
    sites: Sequence[str],
    minutes: Sequence[int],
    amounts: Sequence[int],
    columns: Sequence[Sequence[str | None]],
) -> tuple[list[tuple[str, int, int, str, int, int]], list[tuple[str, int, int, str, int, int]]]:
    """Per-minute and per-hour rows, :class:`ValueSum`'s fields, of the rows whose site, minute
    and amount are ``sites[i]``, ``minutes[i]``, ``amounts[i]`` and whose value in dimension
    ``d`` is ``columns[d][i]`` (None or "" when absent: not counted).

    Rows of one site, bucket and dimension are adjacent, by count descending, then value."""
    if not sites:
        return [], []
    pa, pc = _arrow()
    names = sorted(set(sites))
    codes = {name: code for code, name in enumerate(names)}
    n, dims = len(sites), len(columns)
    minute_array = pa.array(minutes, pa.int64())
    values = pa.concat_arrays([pa.array(column, pa.string()) for column in columns])
    table = pa.table(
        {
            "site": pa.concat_arrays([pa.array([codes[s] for s in sites], pa.int32())] * dims),
            "minute": pa.concat_arrays([minute_array] * dims),
            "hour": pa.concat_arrays([pc.divide(minute_array, 60)] * dims),
            "dim": pa.concat_arrays([pa.repeat(pa.scalar(d, pa.int8()), n) for d in range(dims)]),
            "value": values,
            "amount": pa.concat_arrays([pa.array(amounts, pa.int64())] * dims),
        }
    )
    table = table.filter(pc.and_(pc.is_valid(values), pc.not_equal(values, "")))
    sums = [("value", "count"), ("amount", "sum")]
    per_minute = table.group_by(["site", "minute", "dim", "value"]).aggregate(sums)
    per_hour = table.group_by(["site", "hour", "dim", "value"]).aggregate(sums)
    return (
        list(_rows(per_minute, "minute", names, lambda t: t["amount_sum"].to_pylist())),
        list(_rows(per_hour, "hour", names, lambda t: t["amount_sum"].to_pylist())),
    )
