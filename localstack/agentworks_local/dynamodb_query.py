"""Query served from the sorted per-partition indexes of dynamodb_index.py.

moto (pinned 5.2.5) answers a Query by sorting the whole table, then walking it. This walks
only the partition's keys that can be on the page: bisect finds where the key condition and
ExclusiveStartKey begin and end, and moto's own loop (limit, 1 MB page, ScannedCount,
LastEvaluatedKey, projection, filter) runs over those keys. Requests outside what it mimics
exactly take moto's query.
"""

from __future__ import annotations

import contextlib
import copy
from bisect import bisect_left, bisect_right
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, Table

from agentworks_local.dynamodb_index import TOP, Key, Partition, SortedIndex, index_of

# moto's LimitedSizeDict refuses items whose Item.size() would exceed this.
_MAX_ITEM_SIZE = 405_000
_RANGE_OPERATORS = {"=", "<", "<=", ">", ">=", "BETWEEN", "BEGINS_WITH"}

_original: list[Any] = []
_lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()


def _cast(value: Any, expected_type: str) -> Any:
    """The sort value of a request's attribute value, or TOP if it is not one we can order."""
    if not isinstance(value, DynamoType) or value.type != expected_type:
        return TOP
    try:
        return value.cast_value
    except Exception:
        return TOP


def _after_prefix(prefix: str) -> str | None:
    """The least string above every string that starts with `prefix` (None: no such)."""
    while prefix and prefix[-1] == chr(0x10FFFF):
        prefix = prefix[:-1]
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None


def _bounds(keys: list[Key], head: Any, operator: str | None, values: list[Any]) -> tuple[int, int]:
    """[lo, hi) of the partition's keys that satisfy the range condition."""
    lo, hi = 0, len(keys)
    if operator is None:
        return lo, hi
    below = lambda v: bisect_left(keys, (head, v))  # noqa: E731  first key whose range >= v
    above = lambda v: bisect_left(keys, (head, v, TOP))  # noqa: E731  first key whose range > v
    first = values[0]
    if operator == "=":
        return below(first), above(first)
    if operator == "<":
        return lo, below(first)
    if operator == "<=":
        return lo, above(first)
    if operator == ">":
        return above(first), hi
    if operator == ">=":
        return below(first), hi
    if operator == "BETWEEN":
        return below(first), above(values[1])
    following = _after_prefix(first)  # BEGINS_WITH on a String
    return below(first), hi if following is None else below(following)


def _plan(
    table: Table,
    hash_key: DynamoType | None,
    range_comparison: str | None,
    range_objs: list[DynamoType],
    limit: Any,
    start_key: Any,
    index_name: str | None,
    consistent_read: bool,
    hash_conditions: list[tuple[str, DynamoType]] | None,
    range_conditions: list[tuple[str, str, list[DynamoType]]] | None,
) -> tuple[SortedIndex, Any, list[Any], Key | None] | None:
    """What the indexed query needs, or None when moto's own query must answer."""
    index = index_of(table)
    order = index.orders.get(index_name) if index is not None else None
    if order is None or order.irregular or hash_key is None:
        return None
    if index_name and consistent_read and table.get_index(index_name) in table.global_indexes:
        return None  # moto raises
    if limit is not None and (type(limit) is not int or limit < 1):
        return None
    if not hash_conditions or len(hash_conditions) != 1:
        return None
    name, value = hash_conditions[0]
    head = _cast(hash_key, order.types[order.hash_attr])
    if name != order.hash_attr or value != hash_key or head is TOP:
        return None
    values: list[Any] = []
    if range_conditions or range_comparison:
        if not range_conditions or len(range_conditions) != 1 or order.range_attr is None:
            return None
        name, operator, objs = range_conditions[0]
        range_type = order.types[order.range_attr]
        values = [_cast(v, range_type) for v in objs]
        arity = 2 if operator == "BETWEEN" else 1
        if (
            name != order.range_attr
            or operator != range_comparison
            or operator not in _RANGE_OPERATORS
            or len(objs) != arity
            or objs != range_objs
            or TOP in values
            or (operator == "BEGINS_WITH" and range_type != "S")
        ):
            return None
    start: Key | None = None
    if start_key is not None:
        if not isinstance(start_key, dict) or not all(a in start_key for a in order.sort_attrs):
            return None
        try:
            start = tuple(_cast(DynamoType(start_key[a]), order.types[a]) for a in order.sort_attrs)
        except Exception:
            return None
        if TOP in start:
            return None
    return order, head, values, start


def _query(
    self: Table,
    hash_key: DynamoType | None,
    range_comparison: str | None,
    range_objs: list[DynamoType],
    limit: int,
    exclusive_start_key: dict[str, Any],
    scan_index_forward: bool,
    projection_expressions: list[list[str]] | None,
    index_name: str | None = None,
    consistent_read: bool = False,
    filter_expression: Any = None,
    hash_key_conditions: list[tuple[str, DynamoType]] | None = None,
    range_key_conditions: list[tuple[str, str, list[DynamoType]]] | None = None,
    **filter_kwargs: Any,
) -> tuple[list[Item], int, dict[str, Any] | None]:
    with _lock:
        plan = None
        if not filter_kwargs:  # legacy QueryFilter / non-key KeyConditions: moto's path
            plan = _plan(
                self,
                hash_key,
                range_comparison,
                range_objs,
                limit,
                exclusive_start_key,
                index_name,
                consistent_read,
                hash_key_conditions,
                range_key_conditions,
            )
        if plan is None:
            return _original[0](
                self,
                hash_key,
                range_comparison,
                range_objs,
                limit,
                exclusive_start_key,
                scan_index_forward,
                projection_expressions,
                index_name,
                consistent_read,
                filter_expression,
                hash_key_conditions=hash_key_conditions,
                range_key_conditions=range_key_conditions,
                **filter_kwargs,
            )
        order, head, values, start = plan
        partition = order.partitions.get(head) or Partition()
        keys = partition.keys
        lo, hi = _bounds(keys, head, range_comparison, values)
        if scan_index_forward is False:
            if start is not None:
                hi = min(hi, bisect_left(keys, start))
            positions: range = range(hi - 1, -1, -1)
        else:
            if start is not None:
                lo = max(lo, bisect_right(keys, start))
            positions = range(lo, len(keys))
        # moto's loop over the partition, from the first key that can match: keys skipped
        # before it add nothing (no results yet, so no limit or size stop). Past the matching
        # range only moto's limit/size stop can still happen, and only on the next key unless
        # the page is near the size limit.
        results: list[Item] = []
        result_size = scanned_count = 0
        last_evaluated_key = None
        for position in positions:
            item = partition.items[keys[position]]
            if len(results) == limit or result_size + item.size() > RESULT_SIZE_LIMIT:
                last_evaluated_key = self._get_last_evaluated_key(results[-1], index_name)
                break
            value = item.attrs.get(order.range_attr or "") if range_comparison else None
            if not range_comparison or (
                value is not None and value.compare(range_comparison, range_objs)
            ):
                results.append(item)
                result_size += item.size()
                scanned_count += 1
            if not lo <= position < hi and result_size + _MAX_ITEM_SIZE <= RESULT_SIZE_LIMIT:
                break
        results = copy.deepcopy(results)
        if index_name:
            index = self.get_index(index_name)
            results = [index.project(r) for r in results]
        if filter_expression is not None:
            results = [item for item in results if filter_expression.expr(item)]
        if projection_expressions:
            results = [r.project(projection_expressions) for r in results]
        return results, scanned_count, last_evaluated_key


def install(lock: contextlib.AbstractContextManager[Any]) -> None:
    global _lock
    _lock = lock
    if not _original:
        _original.append(Table.query)
        Table.query = _query  # type: ignore[method-assign]
