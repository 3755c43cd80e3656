"""DynamoDB's capacity arithmetic: the read/write units items cost.

Pure functions following the DynamoDB Developer Guide ("Capacity unit consumption"), so the
bench can price what a request wrote or read. Item sizes come from the one implementation
the item-size tests use (tests/support/item_size.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tests.support.item_size import item_size

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
# A GSI entry carries this much bookkeeping on top of its projected attributes.
INDEX_ENTRY_OVERHEAD_BYTES = 100


def write_units(size: int, transactional: bool = False) -> int:
    """One unit per started KB (at least one), doubled inside a transaction."""
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return 2 * units if transactional else units


def read_units(size: int, consistent: bool, transactional: bool = False) -> float:
    """One unit per started 4 KB (at least one); half for eventually consistent reads,
    double for transactional ones."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


def query_read_units(sizes: Iterable[int], consistent: bool) -> float:
    """A Query or Scan sums the sizes of the items it read, then rounds up once."""
    return read_units(sum(sizes), consistent)


def index_entry(
    item: dict[str, Any] | None, key_names: tuple[str, ...], projected: tuple[str, ...] | None
) -> dict[str, Any] | None:
    """The entry a GSI holds for `item`, or None when the item lacks an index key.
    `projected` None means ProjectionType ALL."""
    if not item or any(name not in item for name in key_names):
        return None
    if projected is None:
        return dict(item)
    return {name: item[name] for name in projected if name in item}


def index_write_units(
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    key_names: tuple[str, ...],
    projected: tuple[str, ...] | None,
) -> int:
    """Units one table write costs in one GSI: a put when the item enters the index,
    a delete when it leaves, both when its index key moves, one update when only a
    projected attribute changes, nothing otherwise."""
    old = index_entry(before, key_names, projected)
    new = index_entry(after, key_names, projected)
    if old == new:
        return 0
    if old is None or new is None:
        entry = old if new is None else new
        return write_units(item_size(entry) + INDEX_ENTRY_OVERHEAD_BYTES)
    old_key = [old[k] for k in key_names]
    new_key = [new[k] for k in key_names]
    cost_old = write_units(item_size(old) + INDEX_ENTRY_OVERHEAD_BYTES)
    cost_new = write_units(item_size(new) + INDEX_ENTRY_OVERHEAD_BYTES)
    return cost_old + cost_new if old_key != new_key else max(cost_old, cost_new)
