"""TransactWriteItems that copies only the items it touches.

moto (pinned 5.2.5) deep-copies every table a transaction names before running it, and on
cancellation puts the copies back: the cost of a two-item transaction grows with the tables.
This is moto's own transact_write_items, line for line, except that the backup is a deep copy
of each item the transaction can write (and the length of each named table's stream) and the
rollback puts back exactly those. What moto's whole-table rollback restores is kept: every
item of a table named in the transaction (also when another operation names it by ARN), and
its stream records; a table named only by ARN is not rolled back, as in moto.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

from agentworks_local import dynamodb_index

_original: list[Any] = []
_lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()


class _Undo:
    """The state a cancelled transaction returns to: the items it may write, as they were."""

    def __init__(self, backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        named: dict[str, Table] = {}
        for item in transact_items:  # as moto chooses the tables it backs up
            _, op = next(iter(item.items()))
            table_name = op.get("TableName")
            if table_name and table_name in backend.tables:
                named[table_name] = backend.tables[table_name]
        self.items: dict[tuple[int, Any], tuple[Table, DynamoType, DynamoType | None, Any]] = {}
        for item in transact_items:
            if len(item) != 1:
                continue
            op_type, op = next(iter(item.items()))
            if op_type == "ConditionCheck":
                continue  # reads only
            table = _resolve(backend, op.get("TableName"))
            if table is None or named.get(table.name) is not table:
                continue
            key = dynamodb_index.key_of(table, op.get("Item" if op_type == "Put" else "Key"))
            if key is None or not _holds(table, *key):
                continue  # moto fails this operation before it writes
            hash_key, range_key = key
            slot = (id(table), dynamodb_index.primary_key(hash_key, range_key))
            if slot not in self.items:
                current = dynamodb_index.lookup(table, hash_key, range_key)
                self.items[slot] = (table, hash_key, range_key, copy.deepcopy(current))
        self.streams = [
            (t.stream_shard, t.stream_shard.items, len(t.stream_shard.items))
            for t in named.values()
            if t.stream_shard is not None
        ]

    def restore(self) -> None:
        for table, hash_key, range_key, saved in self.items.values():
            if table.range_key_attr is None:
                if saved is None:
                    table.items.pop(hash_key, None)
                else:
                    table.items[hash_key] = saved
            elif saved is None:
                partition = table.items.get(hash_key)
                if partition is not None:
                    partition.pop(range_key, None)
            else:
                table.items[hash_key][range_key] = saved
            dynamodb_index.reindex(table, hash_key, range_key)
        for shard, records, length in self.streams:
            del records[length:]  # StreamShard.add appends, or starts a new list
            shard.items = records


def _holds(table: Table, hash_key: DynamoType, range_key: DynamoType | None) -> bool:
    """Whether the table can store an item under this key (else no write can happen)."""
    if hash_key.type != table.hash_key_type:
        return False
    return table.range_key_attr is None or (
        range_key is not None and range_key.type == table.range_key_type
    )


def _resolve(backend: DynamoDBBackend, table_name: Any) -> Table | None:
    try:
        return backend.get_table(table_name)
    except Exception:
        return None


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    if not dynamodb_index.indexed(self.account_id, self.region_name):
        _original[0](self, transact_items)
        return
    with _lock:
        _transact_write_items(self, transact_items)


def _transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    # moto 5.2.5's DynamoDBBackend.transact_write_items, but for the backup and rollback.
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    undo = _Undo(self, transact_items)

    target_items: set[tuple[str, str]] = set()

    def check_unicity(table_name: str, key: dict[str, Any]) -> None:
        item = (str(table_name), str(dict(sorted(key.items()))))
        if item in target_items:
            raise MultipleTransactionsException()
        target_items.add(item)

    errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
    for item in transact_items:
        original_item: dict[str, Any] | None = None
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException

        try:
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")

            table_name = op["TableName"]
            condition_expression = op.get("ConditionExpression")
            expression_attribute_names = op.get("ExpressionAttributeNames")
            expression_attribute_values = op.get("ExpressionAttributeValues")
            return_values_on_condition_check_failure = op.get("ReturnValuesOnConditionCheckFailure")

            if op_type == "Put":
                attrs = op["Item"]
                table = self.get_table(table_name)
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]

            check_unicity(table_name, key)

            current: Item | None = self.get_item(table_name, key)
            if condition_expression is not None:
                condition_op = get_filter_expression(
                    condition_expression,
                    expression_attribute_names,
                    expression_attribute_values,
                )
                if not condition_op.expr(current):
                    if return_values_on_condition_check_failure == "ALL_OLD" and current:
                        original_item = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=original_item)

            if op_type == "Put":
                attrs = op["Item"]
                self.put_item(
                    table_name,
                    attrs,
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Delete":
                self.delete_item(
                    table_name,
                    key,
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Update":
                update_expression = op["UpdateExpression"]
                self.update_item(
                    table_name,
                    key,
                    update_expression=update_expression,
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            undo.restore()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), original_item))  # type: ignore[arg-type]
        except Exception as e:
            errors.append((type(e).__name__, str(e), original_item))  # type: ignore[arg-type]

    if any(code is not None for code, _, _ in errors):
        undo.restore()
        raise TransactionCanceledException(errors)


def install(lock: contextlib.AbstractContextManager[Any]) -> None:
    global _lock
    _lock = lock
    if not _original:
        _original.append(DynamoDBBackend.transact_write_items)
        DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
