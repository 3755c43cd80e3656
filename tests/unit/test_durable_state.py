"""The local stack's state survives a clean stop and a crash: the same items, objects and
secrets come back, no write is applied twice, and damage is refused with nothing changed.

These run the embedded AWS endpoint (aws_server.AwsServer) over loopback HTTP with boto3,
as the stack's handlers use it; a "crash" drops the process's memory (moto is reset)
without the clean stop's snapshot, leaving exactly what was fsynced.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from agentworks_local import moto_patches
from agentworks_local.aws_server import AwsServer
from agentworks_local.durable_state import (
    COMPACT_AFTER_RECORDS,
    DataDir,
    DataDirError,
    DurableState,
    RestoreReport,
)

TABLE = "durable-test"
HASH_ONLY = "durable-test-hash-only"
BUCKET = "durable-test-bucket"
SECRET = "durable-test-secret"


class Aws:
    """One run of the embedded endpoint on a data folder."""

    def __init__(self, folder: Path, compact_after: int = COMPACT_AFTER_RECORDS) -> None:
        moto_patches.apply()
        self.data = DataDir(folder)
        self.data.lock()
        self.state = DurableState(self.data, compact_after)
        self.server = AwsServer(self.state)
        self.report: RestoreReport = self.server.restore()
        self.server.start()
        session = boto3.Session(
            aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
        )
        config = Config(retries={"max_attempts": 1})
        self.dynamodb = session.client("dynamodb", endpoint_url=self.server.url, config=config)
        self.s3 = session.client("s3", endpoint_url=self.server.url, config=config)
        self.secrets = session.client("secretsmanager", endpoint_url=self.server.url)

    def stop(self) -> None:
        """A clean stop: the journal is folded into the snapshot."""
        self.server.stop()
        self.data.unlock()
        _forget_everything()

    def crash(self) -> None:
        """Memory gone, files as they were: no snapshot is written."""
        self.server.stop(fold=False)
        self.data.unlock()
        _forget_everything()


def _forget_everything() -> None:
    """What the process held in memory (moto's backends) is gone, as after an exit."""
    from moto.moto_api._internal.models import moto_api_backend

    moto_api_backend.reset()


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    _forget_everything()
    yield tmp_path / "data"
    _forget_everything()


def _workload(aws: Aws) -> None:
    """Every kind of write the stack makes, including ones that must not apply twice."""
    db = aws.dynamodb
    db.create_table(
        TableName=TABLE,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    db.update_time_to_live(
        TableName=TABLE, TimeToLiveSpecification={"AttributeName": "ttl", "Enabled": True}
    )
    for i in range(12):
        db.put_item(
            TableName=TABLE,
            Item={
                "pk": {"S": f"p{i % 3}"},
                "sk": {"S": f"s{i:03d}"},
                "g": {"S": f"g{i % 2}"},
                "n": {"N": "0"},
                "nested": {"M": {"list": {"L": [{"S": "a"}, {"N": "1"}, {"B": b"\x00\xff"}]}}},
                "bin": {"B": b"\x01\x02"},
                "set": {"SS": ["x", "y"]},
                "ttl": {"N": "4102444800"},
            },
        )
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        db.put_item(
            TableName=TABLE,
            Item={"pk": {"S": "p0"}, "sk": {"S": "s000"}},
            ConditionExpression="attribute_not_exists(pk)",
        )
    for _ in range(3):  # ADD is not idempotent: replaying one twice would show
        db.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "p1"}, "sk": {"S": "s001"}},
            UpdateExpression="ADD n :one SET g = :moved",
            ExpressionAttributeValues={":one": {"N": "1"}, ":moved": {"S": "g9"}},
        )
    db.delete_item(TableName=TABLE, Key={"pk": {"S": "p2"}, "sk": {"S": "s002"}})
    db.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "t"}, "sk": {"S": "1"}}}},
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": {"pk": {"S": "p0"}, "sk": {"S": "s000"}},
                    "UpdateExpression": "ADD n :ten",
                    "ExpressionAttributeValues": {":ten": {"N": "10"}},
                }
            },
        ]
    )
    with pytest.raises(ClientError, match="TransactionCanceled"):
        db.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "t"}, "sk": {"S": "2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "t"}, "sk": {"S": "1"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    db.batch_write_item(
        RequestItems={
            TABLE: [
                {"PutRequest": {"Item": {"pk": {"S": "b"}, "sk": {"S": str(i)}}}} for i in range(5)
            ]
            + [{"DeleteRequest": {"Key": {"pk": {"S": "p0"}, "sk": {"S": "s003"}}}}]
        }
    )
    db.create_table(
        TableName=HASH_ONLY,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for name in ("a", "b", "c"):
        db.put_item(TableName=HASH_ONLY, Item={"id": {"S": name}, "v": {"N": "1"}})
    db.update_item(
        TableName=HASH_ONLY,
        Key={"id": {"S": "b"}},
        UpdateExpression="ADD v :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    aws.s3.create_bucket(Bucket=BUCKET)
    aws.s3.put_object(Bucket=BUCKET, Key="kept.bin", Body=bytes(range(256)) * 40)
    aws.s3.put_object(Bucket=BUCKET, Key="dropped.txt", Body=b"soon gone")
    aws.s3.delete_object(Bucket=BUCKET, Key="dropped.txt")
    aws.secrets.create_secret(Name=SECRET, SecretString="first")
    aws.secrets.put_secret_value(SecretId=SECRET, SecretString="signing-key")


def _state(aws: Aws) -> dict[str, Any]:
    """Everything a restart must bring back, in a comparable form."""
    db = aws.dynamodb
    items = sorted(
        db.scan(TableName=TABLE, ConsistentRead=True)["Items"],
        key=lambda item: (item["pk"]["S"], item["sk"]["S"]),
    )
    by_g = sorted(
        (item["pk"]["S"], item["sk"]["S"])
        for item in db.query(
            TableName=TABLE,
            IndexName="by-g",
            KeyConditionExpression="g = :g",
            ExpressionAttributeValues={":g": {"S": "g9"}},
        )["Items"]
    )
    ttl = db.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
    objects = {
        o["Key"]: aws.s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
        for o in aws.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    }
    secret = aws.secrets.get_secret_value(SecretId=SECRET)["SecretString"]
    hash_only = sorted(db.scan(TableName=HASH_ONLY)["Items"], key=lambda item: item["id"]["S"])
    return {
        "items": items,
        "hash_only": hash_only,
        "by_g": by_g,
        "ttl": ttl,
        "objects": objects,
        "secret": secret,
    }


def _counter(state: dict[str, Any], pk: str, sk: str) -> str:
    return next(i["n"]["N"] for i in state["items"] if (i["pk"]["S"], i["sk"]["S"]) == (pk, sk))


def test_a_clean_stop_keeps_everything(folder: Path) -> None:
    first = Aws(folder)
    _workload(first)
    before = _state(first)
    first.stop()

    second = Aws(folder)
    try:
        assert _state(second) == before
        assert second.report.replayed == 0  # all of it came from the snapshot
        assert second.report.items == len(before["items"]) + len(before["hash_only"])
    finally:
        second.stop()
    assert _counter(before, "p1", "s001") == "3" and _counter(before, "p0", "s000") == "10"
    assert set(before["objects"]) == {"kept.bin"} and before["secret"] == "signing-key"


def test_a_crash_keeps_every_acknowledged_write(folder: Path) -> None:
    first = Aws(folder)
    _workload(first)
    before = _state(first)
    first.crash()
    assert not first.data.snapshot.exists()  # only the journal holds it

    second = Aws(folder)
    try:
        assert _state(second) == before
        assert second.report.replayed > 0 and second.report.torn_bytes == 0
    finally:
        second.crash()  # again, before anything folded the journal in
    third = Aws(folder)
    try:
        assert _state(third) == before and third.report.replayed == second.report.replayed
    finally:
        third.stop()
    fourth = Aws(folder)  # the clean stop folded it in: all from the snapshot now
    try:
        assert _state(fourth) == before and fourth.report.replayed == 0
    finally:
        fourth.stop()


def test_compactions_while_running_lose_and_repeat_nothing(folder: Path) -> None:
    first = Aws(folder, compact_after=4)
    _workload(first)
    before = _state(first)
    assert first.state.compactions > 3
    first.crash()
    second = Aws(folder)
    try:
        assert _state(second) == before
    finally:
        second.stop()


def test_a_stop_between_snapshot_and_journal_truncation_repeats_nothing(folder: Path) -> None:
    first = Aws(folder)
    _workload(first)
    before = _state(first)
    journal = first.data.journal.read_bytes()
    first.stop()  # snapshot written, journal emptied …
    first.data.journal.write_bytes(journal)  # … as if the stop died before the truncation
    second = Aws(folder)
    try:
        assert _state(second) == before  # ADD counters not doubled
        assert second.report.replayed == 0
    finally:
        second.stop()


def test_a_torn_final_write_is_dropped_and_said(folder: Path) -> None:
    first = Aws(folder)
    _workload(first)
    first.dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "last"}, "sk": {"S": "1"}})
    first.crash()
    data = first.data.journal.read_bytes()
    first.data.journal.write_bytes(data[:-7])  # the crash cut the last write short
    second = Aws(folder)
    try:
        keys = {(i["pk"]["S"], i["sk"]["S"]) for i in _state(second)["items"]}
        assert ("last", "1") not in keys and ("t", "1") in keys
        assert second.report.torn_bytes > 0
        assert "cut off" in second.report.describe()
    finally:
        second.stop()


@pytest.mark.parametrize("damaged", ["snapshot", "journal"])
def test_damaged_state_is_refused_and_left_as_it_was(folder: Path, damaged: str) -> None:
    first = Aws(folder)
    _workload(first)
    if damaged == "snapshot":
        first.stop()
    else:
        first.crash()
    path = folder / damaged
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    files = {p.name: p.read_bytes() for p in folder.iterdir()}

    data_dir = DataDir(folder)
    with pytest.raises(DataDirError, match=r"damaged.*nothing was changed.*--reset"):
        DurableState(data_dir).restore(lambda environ, start_response: [b""])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files


def test_two_stacks_never_share_a_folder(folder: Path) -> None:
    first = DataDir(folder)
    first.lock()
    try:
        with pytest.raises(DataDirError, match=r"another local stack \(pid \d+\).*--data-dir"):
            DataDir(folder).lock()
    finally:
        first.unlock()
    second = DataDir(folder)
    second.lock()  # free again once the first lets go
    second.unlock()
