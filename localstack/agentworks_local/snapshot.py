"""The local stack's snapshot: everything the journal held, folded into one file.

A snapshot is a file of journal-framed records (journal.py), written atomically:

1. a header: `{"kind": "snapshot", "format": 1, "last_seq": N}` (the last journal record
   it holds: a journal record at or below it is not replayed again);
2. the *carried* requests, in order: every journaled write other than a DynamoDB item write
   (CreateTable, UpdateTimeToLive, S3 objects, Secrets Manager values). They are few, and
   replaying them rebuilds tables, buckets and secrets exactly as they were made;
3. the DynamoDB items of every table, in chunks, as DynamoDB JSON. A hundred thousand items
   replayed as requests would take minutes; loaded straight into moto's tables they take
   seconds;
4. an end marker with the counts, so a snapshot cut short can never pass for a whole one.

Any damage to a snapshot is refused: it is only ever replaced whole, never torn.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworks_local.journal import JournalDamaged, encode, read_records, write_atomically

FORMAT = 1
ITEMS_PER_CHUNK = 1000


class SnapshotDamaged(Exception):
    pass


@dataclass
class Snapshot:
    last_seq: int = 0  # the last journal record folded in
    carried: list[bytes] = field(default_factory=list)  # journal payloads, in order
    tables: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def item_count(self) -> int:
        return sum(len(items) for items in self.tables.values())


def _dynamodb_backends() -> Any:
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends


def _tables() -> Iterator[tuple[tuple[str, str, str], Any]]:
    for account_id, regions in dict.items(_dynamodb_backends()):
        for region, backend in dict.items(regions):
            for name, table in backend.tables.items():
                yield (account_id, region, name), table


def _items_of(table: Any) -> Iterator[Any]:
    for partition in table.items.values():
        if table.range_key_attr:
            yield from partition.values()
        else:
            yield partition


def _plain(value: Any) -> dict[str, Any]:
    """A DynamoType as DynamoDB JSON: what moto was given, so moto reads it back the same.
    (Item.to_json is five times slower and turns nested binary values into bytes.)"""
    kind, inner = value.type, value.value
    if kind == "M":
        return {"M": {key: _plain(member) for key, member in inner.items()}}
    if kind == "L":
        return {"L": [_plain(member) for member in inner]}
    if isinstance(inner, bytes):
        return {kind: base64.b64encode(inner).decode()}
    if kind == "BS":
        return {kind: [base64.b64encode(v).decode() if isinstance(v, bytes) else v for v in inner]}
    return {kind: inner}


def _attributes(item: Any) -> dict[str, Any]:
    return {name: _plain(value) for name, value in item.attrs.items()}


def encode_snapshot(carried: list[bytes], last_seq: int) -> bytes:
    """The whole snapshot of moto's current DynamoDB items plus `carried`; the caller holds
    the locks that keep the state still meanwhile."""
    header = {"kind": "snapshot", "format": FORMAT, "last_seq": last_seq}
    frames = [encode(json.dumps(header).encode())]
    frames += [encode(payload) for payload in carried]
    items = 0
    for (account_id, region, name), table in _tables():
        chunk: list[dict[str, Any]] = []
        for item in _items_of(table):
            chunk.append(_attributes(item))
            if len(chunk) == ITEMS_PER_CHUNK:
                frames.append(_items_frame(account_id, region, name, chunk))
                items += len(chunk)
                chunk = []
        if chunk:
            frames.append(_items_frame(account_id, region, name, chunk))
            items += len(chunk)
    end = {"kind": "end", "carried": len(carried), "items": items}
    frames.append(encode(json.dumps(end).encode()))
    return b"".join(frames)


def _items_frame(account_id: str, region: str, table: str, items: list[dict[str, Any]]) -> bytes:
    chunk = {"kind": "items", "account": account_id, "region": region, "table": table}
    return encode(json.dumps({**chunk, "items": items}, separators=(",", ":")).encode())


def write_snapshot(path: Path, carried: list[bytes], last_seq: int) -> None:
    write_atomically(path, encode_snapshot(carried, last_seq))


def read_snapshot(path: Path) -> Snapshot | None:
    """The snapshot at `path` (None when there is none); SnapshotDamaged when it is not whole."""
    if not path.exists():
        return None
    try:
        found = read_records(path)
    except JournalDamaged as damage:
        raise SnapshotDamaged(str(damage)) from None
    if found.torn_bytes or len(found.records) < 2:
        raise SnapshotDamaged(f"{path.name} is incomplete (cut off at byte {found.good_bytes})")
    try:
        header = json.loads(found.records[0])
        end = json.loads(found.records[-1])
    except ValueError:
        raise SnapshotDamaged(f"{path.name} does not start and end as a snapshot") from None
    if header.get("kind") != "snapshot" or end.get("kind") != "end":
        raise SnapshotDamaged(f"{path.name} does not start and end as a snapshot")
    if header.get("format") != FORMAT:
        raise SnapshotDamaged(
            f"{path.name} has format {header.get('format')!r}; this version reads {FORMAT}"
        )
    snapshot = Snapshot(last_seq=int(header.get("last_seq", 0)))
    for payload in found.records[1:-1]:
        if not payload.startswith(b'{"kind":"items"'):
            snapshot.carried.append(payload)
            continue
        chunk = json.loads(payload)
        key = (chunk["account"], chunk["region"], chunk["table"])
        snapshot.tables.setdefault(key, []).extend(chunk["items"])
    if (len(snapshot.carried), snapshot.item_count) != (end.get("carried"), end.get("items")):
        raise SnapshotDamaged(f"{path.name}: its counts do not match its end marker")
    return snapshot


def load_items(snapshot: Snapshot) -> None:
    """Puts the snapshot's items into moto's tables (made by the carried requests).

    moto's own put_item validates and re-sizes each attribute (quadratic in their number);
    these items passed that check when they were first written, so they are built directly,
    in one loop without a call per attribute (100,000 messages are 900,000 attributes), and
    each partition's hash key is made and hashed once, not once per item.
    """
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

    new_type, new_item = DynamoType.__new__, Item.__new__
    backends = _dynamodb_backends()
    for (account_id, region, name), items in snapshot.tables.items():
        table = backends[account_id][region].tables.get(name)
        if table is None:
            raise SnapshotDamaged(f"the snapshot has items for a table it never made: {name}")
        hash_attr, range_attr = table.hash_key_attr, table.range_key_attr
        # A new items dict, not the old one filled: the local indexes (dynamodb_index.py)
        # see a replaced dict and index the table afresh on its next use.
        loaded: Any = defaultdict(dict)
        for hash_key, held in table.items.items():
            loaded[hash_key] = dict(held) if range_attr else held
        partitions: dict[tuple[str, Any], Any] = {}  # (type, raw value) -> range key -> item
        for attrs in items:
            typed = LimitedSizeDict()
            for attribute, value in attrs.items():
                for kind, inner in value.items():  # exactly one: {"S": "…"}
                    if kind == "M" or kind == "L":
                        made = DynamoType(value)  # nested values: moto's constructor
                    else:
                        made = new_type(DynamoType)
                        made.type, made.value = kind, inner
                    dict.__setitem__(typed, attribute, made)  # the size check passed once
            item: Any = new_item(Item)
            item.attrs = typed
            item.hash_key = typed[hash_attr]
            if range_attr:
                item.range_key = typed[range_attr]
                ((kind, raw),) = attrs[hash_attr].items()
                partition = partitions.get((kind, raw))
                if partition is None:
                    partition = partitions[(kind, raw)] = loaded[item.hash_key]
                partition[item.range_key] = item
            else:
                item.range_key = None
                loaded[item.hash_key] = item
        table.items = loaded


def index_tables(snapshot: Snapshot) -> None:
    """Builds the local indexes (dynamodb_index.py) of the tables the snapshot filled, so the
    first query after a restart does not wait for them."""
    from agentworks_local.dynamodb_index import index_of

    backends = _dynamodb_backends()
    for account_id, region, name in snapshot.tables:
        index_of(backends[account_id][region].tables[name])
