"""A DynamoDB table's stream read from where it is now, in order, as Lambda's event source
mapping would hand the records to a function (timestamps as epoch seconds, JSON through)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.config import Config


class StreamReader:
    def __init__(self, dynamodb: Any, table: str) -> None:
        import boto3

        self.client = boto3.client(
            "dynamodbstreams",
            region_name=dynamodb.meta.region_name,
            config=Config(account_id_endpoint_mode="disabled"),
        )
        arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        shard = self.client.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
        self.iterator = self.client.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST"
        )["ShardIterator"]

    def records(self) -> list[dict[str, Any]]:
        """Every record since the last call."""
        got = self.client.get_records(ShardIterator=self.iterator)
        self.iterator = got["NextShardIterator"]
        for record in got["Records"]:
            created = record["dynamodb"].get("ApproximateCreationDateTime")
            if isinstance(created, datetime):
                record["dynamodb"]["ApproximateCreationDateTime"] = int(created.timestamp())
        return list(got["Records"])
