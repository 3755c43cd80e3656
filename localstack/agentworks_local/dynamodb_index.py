"""Sorted per-partition indexes for moto's in-memory DynamoDB, so a request costs what its
page costs, not what the table holds.

moto (pinned 5.2.5) sorts the whole table on every Query, base table and index alike. These
overrides keep, per table, the keys of each partition in sorted lists (the base table and
every GSI/LSI with one hash and at most one range attribute, in moto's own order including
its tie-break on the table keys) and a TTL index that lists what has expired; Query is
served from them in dynamodb_query.py. Whatever that does not handle exactly takes moto's
own code, which reads the items themselves and so never depends on these indexes.

Every write moto makes goes through Table.put_item or Table.delete_item (puts, batch writes,
transactions, PartiQL, imports) or changes an Item in place in DynamoDBBackend.update_item;
each re-indexes the primary key it touched from the table's current state. A table whose
items dict is replaced (restores, moto's own rollback) or whose indexes change is indexed
afresh on next use. The index is an attribute of moto's Table, so it goes with a deleted
table, and a deep copy of a table (a backup) carries none. Transactions:
dynamodb_transactions.py. Tables of an account and region marked `unindexed` take moto's own
code throughout (the differential test compares the two in one process).

Thread safety: every DynamoDB request already runs under moto_patches' one RLock; the
overrides take the same (re-entrant) lock so in-process callers outside a request (the TTL
sweeper, loaders calling table.put_item) see and leave the indexes consistent.
"""

from __future__ import annotations

import contextlib
import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import GlobalSecondaryIndex, Table

from agentworks_local.handlers import LOCAL_ACCOUNT_ID, LOCAL_REGION

if TYPE_CHECKING:
    from agentworks_local.scheduler import TtlTable

_ATTR = "_agentworks_index"

Key = tuple[Any, ...]
Pk = tuple[Any, Any]

_lock: contextlib.AbstractContextManager[Any] = threading.RLock()
_originals: dict[str, Any] = {}
_unindexed: set[tuple[str, str]] = set()
_generation = 0


class _Top:
    """Sorts after every key value: the upper bound of a key prefix in bisect probes."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return other is self

    def __gt__(self, other: object) -> bool:
        return other is not self

    def __ge__(self, other: object) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return 0


TOP = _Top()


class Partition:
    __slots__ = ("items", "keys")

    def __init__(self) -> None:
        self.keys: list[Key] = []  # sort keys, ascending
        self.items: dict[Key, Item] = {}


class SortedIndex:
    """One ordering of a table's items (the base table or one secondary index): per value of
    the hash attribute, the tuples moto sorts by, in moto's order."""

    def __init__(
        self, hash_attr: str, range_attr: str | None, sort_attrs: list[str], types: dict[str, str]
    ) -> None:
        self.hash_attr = hash_attr
        self.range_attr = range_attr
        self.sort_attrs = sort_attrs
        self.types = types
        self.required = [a for a in (hash_attr, range_attr) if a is not None]
        self.partitions: dict[Any, Partition] = {}
        self.where: dict[Pk, Key] = {}
        # Items holding an index key of another type than declared: moto's query sorts those
        # by comparisons we do not mimic, so queries on this ordering take moto's path.
        self.irregular: set[Pk] = set()

    def add(self, pk: Pk, item: Item, in_order: bool = True) -> None:
        """Indexes `item`; `in_order=False` appends instead (a bulk load, then `sort()`)."""
        attrs = item.attrs
        if any(a not in attrs for a in self.required):
            return  # not in this index
        values = []
        for name in self.sort_attrs:
            value = attrs.get(name)
            if value is None or value.type != self.types[name]:
                self.irregular.add(pk)
                return
            values.append(value.cast_value)
        key = tuple(values)
        partition = self.partitions.get(key[0])
        if partition is None:
            partition = self.partitions[key[0]] = Partition()
        if in_order:
            insort(partition.keys, key)
        else:
            partition.keys.append(key)
        partition.items[key] = item
        self.where[pk] = key

    def sort(self) -> None:
        """Puts each partition in order after a bulk load: one sort, not a shift per item."""
        for partition in self.partitions.values():
            partition.keys.sort()

    def remove(self, pk: Pk) -> None:
        self.irregular.discard(pk)
        key = self.where.pop(pk, None)
        if key is None:
            return
        partition = self.partitions[key[0]]
        del partition.keys[bisect_left(partition.keys, key)]
        del partition.items[key]
        if not partition.keys:
            del self.partitions[key[0]]


class _TtlIndex:
    """Items whose TTL attribute is a Number, ordered by it."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.entries: list[tuple[Any, Pk]] = []
        self.where: dict[Pk, Any] = {}
        self.items: dict[Pk, Item] = {}

    @classmethod
    def of(cls, attribute: str, stored: Iterable[tuple[Pk, Item]]) -> _TtlIndex:
        """The index of every stored item, sorted once (inserting one by one into the one
        list shifts it each time: seconds for a 100,000-item table, with the GIL held)."""
        index = cls(attribute)
        for pk, item in stored:
            expires = index._expires(item)
            if expires is not None:
                index.entries.append((expires, pk))
                index.where[pk], index.items[pk] = expires, item
        index.entries.sort()
        return index

    def _expires(self, item: Item) -> Any:
        value = item.attrs.get(self.attribute)
        return value.cast_value if value is not None and value.type == "N" else None

    def add(self, pk: Pk, item: Item) -> None:
        expires = self._expires(item)
        if expires is None:
            return
        insort(self.entries, (expires, pk))
        self.where[pk], self.items[pk] = expires, item

    def remove(self, pk: Pk) -> None:
        if pk in self.where:
            expires = self.where.pop(pk)
            del self.entries[bisect_left(self.entries, (expires, pk))]
            del self.items[pk]

    def between(self, earliest: Any, latest: Any) -> list[Item]:
        start = bisect_left(self.entries, (earliest,))
        end = bisect_left(self.entries, (latest, TOP))
        return [self.items[pk] for _, pk in self.entries[start:end]]


class TableIndex:
    """Every ordering of one table, kept current by the write hooks."""

    def __init__(self, table: Table) -> None:
        self.items_ref = table.items
        self.signature = _signature(table)
        self.generation = _generation
        self.orders: dict[str | None, SortedIndex] = {}
        self.ttl: dict[str, _TtlIndex] = {}
        types = {a["AttributeName"]: a["AttributeType"] for a in table.attr}
        types[table.hash_key_attr] = table.hash_key_type
        if table.range_key_attr is not None:
            types[table.range_key_attr] = table.range_key_type or ""
        base_sort = table._generate_attr_to_sort_by([table.hash_key_attr], [table.range_key_attr])
        self.orders[None] = SortedIndex(table.hash_key_attr, table.range_key_attr, base_sort, types)
        for index in table.all_indexes():
            hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
            ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
            if len(hashes) != 1 or len(ranges) > 1:
                continue  # multi-attribute keys: moto's path
            if ranges:
                range_attrs: list[str | None] = [ranges[0], table.range_key_attr]
            elif isinstance(index, GlobalSecondaryIndex) and table.range_key_attr:
                range_attrs = [table.range_key_attr, table.range_key_attr]
            else:
                range_attrs = [table.hash_key_attr, table.range_key_attr]
            sort_attrs = table._generate_attr_to_sort_by(
                [hashes[0], table.hash_key_attr], range_attrs
            )
            if all(a in types for a in sort_attrs):
                range_attr = ranges[0] if ranges else None
                self.orders[index.name] = SortedIndex(hashes[0], range_attr, sort_attrs, types)
        for pk, item in _stored(table):
            for order in self.orders.values():
                order.add(pk, item, in_order=False)
        for order in self.orders.values():
            order.sort()

    def __deepcopy__(self, memo: dict[int, Any]) -> None:
        return None  # a copied table (backup, moto's own rollback) is indexed afresh

    def reindex(self, pk: Pk, item: Item | None) -> None:
        for order in self.orders.values():
            order.remove(pk)
            if item is not None:
                order.add(pk, item)
        for ttl in self.ttl.values():
            ttl.remove(pk)
            if item is not None:
                ttl.add(pk, item)

    def ttl_index(self, table: Table, attribute: str) -> _TtlIndex:
        if attribute not in self.ttl:
            self.ttl[attribute] = _TtlIndex.of(attribute, _stored(table))
        return self.ttl[attribute]


def _signature(table: Table) -> Any:
    return (
        tuple((a["AttributeName"], a["AttributeType"]) for a in table.attr),
        tuple(
            (i.name, type(i), tuple((k["AttributeName"], k["KeyType"]) for k in i.schema))
            for i in table.all_indexes()
        ),
    )


def _stored(table: Table) -> Iterator[tuple[Pk, Item]]:
    for value in table.items.values():
        for item in value.values() if isinstance(value, dict) else [value]:
            if isinstance(item, Item):
                yield primary_key(item.hash_key, item.range_key), item


def primary_key(hash_key: DynamoType, range_key: DynamoType | None) -> Pk:
    return hash_key.cast_value, None if range_key is None else range_key.cast_value


def lookup(table: Table, hash_key: DynamoType, range_key: DynamoType | None) -> Item | None:
    stored = table.items.get(hash_key)  # .get: moto's defaultdict would add a partition
    if table.range_key_attr is not None and isinstance(stored, dict):
        stored = stored.get(range_key)
    return stored if isinstance(stored, Item) else None


# -- switch ----------------------------------------------------------------------------------


def indexed(account_id: str, region: str) -> bool:
    return (account_id, region) not in _unindexed


@contextlib.contextmanager
def unindexed(account_id: str, region: str) -> Iterator[None]:
    """Tables of this account and region take moto's original code (to compare against)."""
    global _generation
    with _lock:
        _unindexed.add((account_id, region))
        _generation += 1
    try:
        yield
    finally:
        with _lock:
            _unindexed.discard((account_id, region))
            _generation += 1


def index_of(table: Table) -> TableIndex | None:
    """The table's index, built now if it has none or it no longer matches the table."""
    if not indexed(table.account_id, table.region_name):
        return None
    index: TableIndex | None = table.__dict__.get(_ATTR)
    if (
        index is None
        or index.items_ref is not table.items
        or index.generation != _generation
        or index.signature != _signature(table)
    ):
        index = TableIndex(table)
        setattr(table, _ATTR, index)
    return index


def reindex(table: Table, hash_key: Any, range_key: Any) -> None:
    """Brings the indexes in line with what the table now holds under this primary key."""
    if not isinstance(hash_key, DynamoType) or hash_key.type != table.hash_key_type:
        return  # not a key this table can hold: nothing was written under it
    if table.range_key_attr is not None and (
        not isinstance(range_key, DynamoType) or range_key.type != table.range_key_type
    ):
        return
    index = index_of(table)
    if index is not None:
        range_key = range_key if table.range_key_attr is not None else None
        index.reindex(primary_key(hash_key, range_key), lookup(table, hash_key, range_key))


def key_of(table: Table, attrs: Any) -> tuple[DynamoType, DynamoType | None] | None:
    try:
        hash_key = DynamoType(attrs[table.hash_key_attr])
        if table.range_key_attr is None:
            return hash_key, None
        return hash_key, DynamoType(attrs[table.range_key_attr])
    except (KeyError, TypeError, IndexError, AttributeError):
        return None


# -- write hooks -----------------------------------------------------------------------------


def _put_item(self: Table, item_attrs: dict[str, Any], *args: Any, **kwargs: Any) -> Item:
    with _lock:
        try:
            return _originals["put_item"](self, item_attrs, *args, **kwargs)
        finally:
            key = key_of(self, item_attrs)
            if key is not None:
                reindex(self, *key)


def _delete_item(self: Table, hash_key: DynamoType, range_key: DynamoType | None) -> Item | None:
    with _lock:
        try:
            return _originals["delete_item"](self, hash_key, range_key)
        finally:
            if self.range_key_attr is not None and not range_key:
                self.__dict__.pop(_ATTR, None)  # moto dropped a whole partition
            else:
                reindex(self, hash_key, range_key)


def _update_item(
    self: DynamoDBBackend, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any
) -> Item:
    with _lock:
        try:
            return _originals["update_item"](self, table_name, key, *args, **kwargs)
        finally:
            table = self.tables.get(table_name)
            if table is None:  # by ARN
                table = next((t for t in self.tables.values() if t.table_arn == table_name), None)
            parsed = key_of(table, key) if table is not None else None
            if table is not None and parsed is not None:
                reindex(table, *parsed)  # the update changed the Item in place


# -- TTL -------------------------------------------------------------------------------------


def expiring(table: Table, attribute: str, earliest: float, latest: float) -> list[Item]:
    """Items whose `attribute` is a Number between `earliest` and `latest` (inclusive)."""
    from decimal import Decimal

    with _lock:
        index = index_of(table)
        if index is None:
            ttl = _TtlIndex.of(attribute, _stored(table))
        else:
            ttl = index.ttl_index(table, attribute)
        return ttl.between(Decimal(earliest), Decimal(latest))


def ttl_candidates(
    account_id: str = LOCAL_ACCOUNT_ID, region: str = LOCAL_REGION
) -> Callable[[TtlTable, float, float], list[dict[str, Any]]]:
    """For TtlSweeper: the key and TTL attributes of items that may have expired, read from
    the TTL index of moto's table instead of a scan."""
    from moto.dynamodb.models import dynamodb_backends

    def candidates(table: TtlTable, earliest: float, latest: float) -> list[dict[str, Any]]:
        moto_table = dynamodb_backends[account_id][region].get_table(table.name)
        # One second either side: the sweeper decides with float arithmetic.
        found = expiring(moto_table, table.ttl_attribute, earliest - 1, latest + 1)
        names = (*table.key_attributes, table.ttl_attribute)
        return [{n: item.attrs[n].to_json() for n in names if n in item.attrs} for item in found]

    return candidates


def install(lock: contextlib.AbstractContextManager[Any]) -> None:
    """Patches moto's item writes to keep the indexes (once); `lock` is the one every request
    runs under. dynamodb_query and dynamodb_transactions install their own patches."""
    global _lock
    _lock = lock
    if _originals:
        return
    _originals.update(
        put_item=Table.put_item,
        delete_item=Table.delete_item,
        update_item=DynamoDBBackend.update_item,
    )
    Table.put_item = _put_item  # type: ignore[method-assign]
    Table.delete_item = _delete_item  # type: ignore[method-assign]
    DynamoDBBackend.update_item = _update_item  # type: ignore[method-assign]
