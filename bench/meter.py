"""Counts the DynamoDB requests a piece of code makes and the capacity they consume.

botocore event hooks on the code's own client see every call: `provide-client-params`
(the API parameters, before anything is sent) and `after-call` (the parsed answer).
Write units come from the items as stored: a second, unhooked "oracle" client reads each
written item just before and just after the write, so UpdateItem is priced at the larger
of the two and GSI entries can be compared. Reads are priced from the full stored items
(a projection does not make a read cheaper) and, for a Query or Scan with a
FilterExpression, from every item it *examined* (DynamoDB bills those, returned or not):
the oracle repeats the request without the filter. Oracle reads are never counted.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bench import capacity

_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@dataclass
class Tally:
    """What one stretch of code cost in DynamoDB."""

    requests: Counter[str] = field(default_factory=Counter)
    # (operation, table) of each request: which table a request went to
    by_table: Counter[tuple[str, str]] = field(default_factory=Counter)
    write_units: float = 0.0
    gsi_write_units: float = 0.0
    read_units: float = 0.0
    # (operation kind, which item, units) for each item written: where the units go
    writes: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def billed_write_units(self) -> float:
        """Table and index writes together: what on-demand billing charges."""
        return self.write_units + self.gsi_write_units

    def describe(self) -> str:
        return " + ".join(f"{n}×{op}" if n > 1 else op for op, n in sorted(self.requests.items()))

    def describe_writes(self) -> str:
        return ", ".join(f"{kind} {item} {units}" for kind, item, units in self.writes)

    def units_written(self, key_prefix: str) -> int:
        """Write units of the items whose key starts with `key_prefix` (e.g. "USAGE#")."""
        return sum(units for _, item, units in self.writes if item.startswith(key_prefix))

    def items_written(self, key_prefix: str) -> int:
        return sum(1 for _, item, _ in self.writes if item.startswith(key_prefix))


@dataclass(frozen=True)
class Index:
    name: str
    key_names: tuple[str, ...]
    projected: tuple[str, ...] | None  # None: ProjectionType ALL


@dataclass(frozen=True)
class TableShape:
    key_names: tuple[str, ...]
    indexes: tuple[Index, ...]


def table_shape(oracle: Any, table: str) -> TableShape:
    """Keys and GSIs of a table, as DynamoDB describes them."""
    description = oracle.describe_table(TableName=table)["Table"]
    keys = tuple(k["AttributeName"] for k in description["KeySchema"])
    indexes = []
    for gsi in description.get("GlobalSecondaryIndexes", []):
        index_keys = tuple(k["AttributeName"] for k in gsi["KeySchema"])
        projection = gsi["Projection"]
        kind = projection["ProjectionType"]
        projected: tuple[str, ...] | None = None
        if kind != "ALL":
            extra = tuple(projection.get("NonKeyAttributes", ())) if kind == "INCLUDE" else ()
            projected = tuple(dict.fromkeys(keys + index_keys + extra))
        indexes.append(Index(gsi["IndexName"], index_keys, projected))
    return TableShape(keys, tuple(indexes))


def _label(key: dict[str, Any]) -> str:
    """A key's shape without its ids, e.g. CONV#…/IN#…, for reading where units go."""
    parts = []
    for value in key.values():
        text = str(next(iter(value.values())))
        parts.append(
            text.split("#")[0] + "#…" if "#" in text else ("<seq>" if text.isdigit() else text)
        )
    return "/".join(parts)


@dataclass
class _Write:
    table: str
    key: dict[str, Any]
    kind: str  # Put, Update, Delete, ConditionCheck
    transactional: bool
    before: dict[str, Any] | None = None


class Meter:
    """Hooks a DynamoDB client; adds to the tally in `recording(...)` and ignores the
    rest. Inactive, the hooks return at once, so timing runs are not disturbed."""

    def __init__(self, client: Any, oracle: Any) -> None:
        self._oracle = oracle
        self._shapes: dict[str, TableShape] = {}
        self._tally: Tally | None = None
        client.meta.events.register("provide-client-params.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    @contextlib.contextmanager
    def recording(self, tally: Tally | None) -> Iterator[Tally | None]:
        """Counts into `tally` (None: counts nothing) for the duration of the block."""
        previous, self._tally = self._tally, tally
        try:
            yield tally
        finally:
            self._tally = previous

    # ---- hooks ----

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if self._tally is None:
            return
        writes = self._planned_writes(model.name, params) if model.name in _WRITES else []
        for write in writes:
            write.before = self._stored(write.table, write.key)
        context["bench"] = (self._tally, model.name, params, writes)

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        entry = context.pop("bench", None)
        if entry is None:
            return
        tally, operation, params, writes = entry
        tally.requests[operation] += 1
        for table in _tables(params):
            tally.by_table[(operation, table)] += 1
        for write in writes:
            self._price_write(tally, write)
        if operation not in _WRITES:
            tally.read_units += self._read_units(operation, params, parsed)

    # ---- writes ----

    def _shape(self, table: str) -> TableShape:
        if table not in self._shapes:
            self._shapes[table] = table_shape(self._oracle, table)
        return self._shapes[table]

    def _key_of(self, table: str, item: dict[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self._shape(table).key_names}

    def _planned_writes(self, operation: str, params: dict[str, Any]) -> list[_Write]:
        if operation == "TransactWriteItems":
            planned = []
            for entry in params["TransactItems"]:
                ((kind, body),) = entry.items()
                key = body.get("Key") or self._key_of(body["TableName"], body["Item"])
                planned.append(_Write(body["TableName"], key, kind, True))
            return planned
        if operation == "BatchWriteItem":
            planned = []
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        key = self._key_of(table, request["PutRequest"]["Item"])
                        planned.append(_Write(table, key, "Put", False))
                    else:
                        planned.append(
                            _Write(table, request["DeleteRequest"]["Key"], "Delete", False)
                        )
            return planned
        kind = operation.removesuffix("Item")
        key = params.get("Key") or self._key_of(params["TableName"], params["Item"])
        return [_Write(params["TableName"], key, kind, False)]

    def _stored(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item = self._oracle.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return dict(item) if item else None

    def _price_write(self, tally: Tally, write: _Write) -> None:
        after = (
            write.before if write.kind == "ConditionCheck" else self._stored(write.table, write.key)
        )
        # The larger image is what a Put/Update is billed on; a Delete is billed on what it removed.
        size = max(capacity.item_size(write.before), capacity.item_size(after))
        units = capacity.write_units(size, write.transactional)
        tally.write_units += units
        tally.writes.append((write.kind, _label(write.key), units))
        for index in self._shape(write.table).indexes:
            tally.gsi_write_units += capacity.index_write_units(
                write.before, after, index.key_names, index.projected
            )

    # ---- reads ----

    def _full(self, table: str, returned: dict[str, Any]) -> dict[str, Any] | None:
        """The stored item behind a (possibly projected) returned one."""
        if not all(name in returned for name in self._shape(table).key_names):
            return returned
        return self._stored(table, self._key_of(table, returned))

    def _read_units(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> float:
        if operation == "GetItem":
            item = self._stored(params["TableName"], params["Key"])
            return capacity.read_units(capacity.item_size(item), bool(params.get("ConsistentRead")))
        if operation == "BatchGetItem":
            units = 0.0
            for table, request in params["RequestItems"].items():
                skipped = parsed.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
                for key in request["Keys"]:
                    if key in skipped:
                        continue
                    size = capacity.item_size(self._stored(table, key))
                    units += capacity.read_units(size, bool(request.get("ConsistentRead")))
            return units
        if operation == "TransactGetItems":
            units = 0.0
            for entry in params["TransactItems"]:
                body = entry["Get"]
                size = capacity.item_size(self._stored(body["TableName"], body["Key"]))
                units += capacity.read_units(size, True, transactional=True)
            return units
        if operation in ("Query", "Scan"):
            table = params["TableName"]
            items = parsed.get("Items", [])
            if "FilterExpression" in params:
                items = self._examined(operation, params, int(parsed.get("ScannedCount", 0)))
            if "IndexName" in params:
                sizes = [capacity.item_size(i) for i in items]  # index entries are what is read
            else:
                sizes = [capacity.item_size(self._full(table, i)) for i in items]
            return capacity.query_read_units(sizes, bool(params.get("ConsistentRead")))
        return 0.0  # control-plane calls (DescribeTable, ...) are not billed per unit

    def _examined(
        self, operation: str, params: dict[str, Any], scanned: int
    ) -> list[dict[str, Any]]:
        """The items a filtered Query/Scan read: the same request without its filter (and
        projection), so with the same key condition, Limit and start key."""
        dropped = ("FilterExpression", "ProjectionExpression", "Select")
        bare = {k: v for k, v in params.items() if k not in dropped}
        used = _placeholders(str(bare.get("KeyConditionExpression", "")))
        for field_name in ("ExpressionAttributeValues", "ExpressionAttributeNames"):
            kept = {k: v for k, v in bare.get(field_name, {}).items() if k in used}
            if kept:
                bare[field_name] = kept
            else:
                bare.pop(field_name, None)
        call = self._oracle.query if operation == "Query" else self._oracle.scan
        items = list(call(**bare).get("Items", []))
        if len(items) != scanned:
            raise RuntimeError(f"{operation} re-read {len(items)} items; it examined {scanned}")
        return items


def _tables(params: dict[str, Any]) -> list[str]:
    if "TableName" in params:
        return [str(params["TableName"])]
    if "RequestItems" in params:
        return sorted(params["RequestItems"])
    bodies = [next(iter(entry.values())) for entry in params.get("TransactItems", [])]
    return sorted({str(body["TableName"]) for body in bodies})


def _placeholders(expression: str) -> set[str]:
    """The :value and #name placeholders an expression uses."""
    return set(re.findall(r"[:#][A-Za-z0-9_]+", expression))
