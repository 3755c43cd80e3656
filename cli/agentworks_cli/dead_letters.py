"""Replaying what a failure destination kept (`agentworks ops redrive`), for the queues of
template.yaml (docs/operations.md#dead-letters).

A message is one of three kinds:

- *invocation*: Lambda's record of an asynchronous invocation that ran out of retries
  (`requestContext.functionArn`, `requestPayload`): the payload is invoked again on the
  function it names;
- *stream batch*: Lambda's record of a stream batch that ran out of retries
  (`DDBStreamBatchInfo`): the batch's records are read again from the stream (DynamoDB keeps
  them 24 hours) and handed to the function as the event source would. The range may hold
  records the event's filter had left out; the notifier ignores those itself;
- *event*: an event EventBridge or EventBridge Scheduler could not deliver at all (the event
  itself, its target in the `TARGET_ARN` attribute): invoked on that target.

`function` overrides the target of every message. Each replay is a synchronous invoke, and a
message is deleted only once its replay succeeded: one that fails again stays queued.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

# Received messages stay hidden from other readers while a run replays them; the ones not
# deleted (failed, or a dry run's) are made visible again when the run ends.
_HOLD_SECONDS = 900
_EMPTY_PAGES_MAX = 3  # an open shard answers empty pages once it has caught up


class RecordsGone(Exception):
    """The stream no longer holds the batch (older than 24 hours, or the stream changed)."""


@dataclass
class Replay:
    """One message of the queue and what redrive did (or would do) with it."""

    message_id: str
    kind: str  # "invocation", "stream batch", "event" or "unknown"
    function: str | None
    summary: str
    outcome: str = "pending"  # "would replay", "replayed", "failed", "skipped"
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _body(message: dict[str, Any]) -> Any:
    try:
        return json.loads(message.get("Body") or "")
    except ValueError:
        return None


def _summary(payload: Any) -> str:
    if isinstance(payload, dict) and "detail-type" in payload:
        return f"{payload['detail-type']} of {payload.get('time', '?')}"
    if isinstance(payload, dict) and "trigger_id" in payload:
        return f"workflow schedule {payload['trigger_id']}"
    return json.dumps(payload, separators=(",", ":"))[:80]


def _as_event_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda's event carries it: epoch seconds, the source's ARN."""
    change = dict(record["dynamodb"])
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        change["ApproximateCreationDateTime"] = int(created.timestamp())
    return {**record, "dynamodb": change, "eventSourceARN": stream_arn}


class Redrive:
    def __init__(
        self, sqs: Any, lambda_client: Any, streams: Any, function: str | None = None
    ) -> None:
        self._sqs = sqs
        self._lambda = lambda_client
        self._streams = streams
        self._function = function

    def run(self, queue_url: str, *, dry_run: bool = False, limit: int = 100) -> list[Replay]:
        """Replays up to `limit` messages of the queue (with `dry_run`, only says what)."""
        done: list[Replay] = []
        held: dict[str, str] = {}  # message id -> receipt handle of what stays queued
        try:
            while len(done) < limit:
                page = self._sqs.receive_message(
                    QueueUrl=queue_url,
                    MaxNumberOfMessages=min(10, limit - len(done)),
                    VisibilityTimeout=_HOLD_SECONDS,
                    MessageAttributeNames=["All"],
                    WaitTimeSeconds=0,
                ).get("Messages", [])
                fresh = [m for m in page if m["MessageId"] not in held]
                if not fresh:
                    break
                for message in fresh:
                    replay, payload = self._plan(message)
                    if dry_run or payload is None:
                        replay.outcome = "would replay" if payload is not None else "skipped"
                    else:
                        self._replay(replay, payload)
                    if replay.outcome == "replayed":
                        self._sqs.delete_message(
                            QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"]
                        )
                    else:
                        held[message["MessageId"]] = message["ReceiptHandle"]
                    done.append(replay)
        finally:
            for receipt in held.values():
                self._sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0
                )
        return done

    def _plan(self, message: dict[str, Any]) -> tuple[Replay, Any]:
        """What the message is, and the payload a replay would invoke (None: nothing)."""
        body = _body(message)
        replay = Replay(str(message["MessageId"]), "unknown", self._function, "")
        context = body.get("requestContext") if isinstance(body, dict) else None
        if isinstance(context, dict) and "DDBStreamBatchInfo" in body:
            info = body["DDBStreamBatchInfo"]
            replay.kind = "stream batch"
            replay.function = self._function or context.get("functionArn")
            replay.summary = (
                f"{info.get('batchSize', '?')} stream records "
                f"{info.get('startSequenceNumber')}..{info.get('endSequenceNumber')}"
            )
            try:
                return replay, {"Records": self._stream_records(info)}
            except RecordsGone as gone:
                replay.detail = str(gone)
                return replay, None
        if isinstance(context, dict) and "requestPayload" in body:
            replay.kind = "invocation"
            replay.function = self._function or context.get("functionArn")
            replay.summary = _summary(body["requestPayload"])
            error = (body.get("responsePayload") or {}).get("errorMessage")
            replay.detail = f"it failed with: {error}" if error else ""
            return replay, body["requestPayload"]
        if isinstance(body, dict):
            target = (message.get("MessageAttributes") or {}).get("TARGET_ARN") or {}
            replay.kind = "event"
            replay.function = self._function or target.get("StringValue")
            replay.summary = _summary(body)
            if replay.function is None:
                replay.detail = "no TARGET_ARN attribute names its target; pass --function"
                return replay, None
            return replay, body
        replay.summary = str(message.get("Body") or "")[:80]
        replay.detail = "not JSON: inspect it with `aws sqs receive-message`"
        return replay, None

    def _replay(self, replay: Replay, payload: Any) -> None:
        assert replay.function is not None
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._lambda.invoke(
                FunctionName=replay.function,
                InvocationType="RequestResponse",
                Payload=json.dumps(payload).encode(),
            )
        except (BotoCoreError, ClientError) as error:
            replay.outcome, replay.detail = "failed", str(error)
            return
        answer = response["Payload"].read()
        if response.get("FunctionError"):
            try:
                message = json.loads(answer).get("errorMessage")
            except (ValueError, AttributeError):
                message = answer.decode("utf-8", "replace")[:300]
            replay.outcome, replay.detail = "failed", f"it failed again: {message}"
            return
        replay.outcome, replay.detail = "replayed", ""

    def _stream_records(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The records between the batch's first and last sequence numbers, as the event
        source delivered them (with their `eventSourceARN`)."""
        from botocore.exceptions import ClientError

        end = int(info["endSequenceNumber"])
        records: list[dict[str, Any]] = []
        try:
            iterator = self._streams.get_shard_iterator(
                StreamArn=info["streamArn"],
                ShardId=info["shardId"],
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                SequenceNumber=info["startSequenceNumber"],
            )["ShardIterator"]
            empty = 0
            while iterator and empty < _EMPTY_PAGES_MAX:
                page = self._streams.get_records(ShardIterator=iterator, Limit=1000)
                empty = 0 if page["Records"] else empty + 1
                for record in page["Records"]:
                    if int(record["dynamodb"]["SequenceNumber"]) > end:
                        return records
                    records.append(_as_event_record(record, info["streamArn"]))
                iterator = page.get("NextShardIterator")
        except ClientError as error:
            raise RecordsGone(
                f"the batch's records are no longer in the stream (it keeps them 24 hours): {error}"
            ) from None
        if not records:
            raise RecordsGone("the stream holds none of the batch's records any more")
        return records
