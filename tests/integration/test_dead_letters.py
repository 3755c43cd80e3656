"""Issue 12, nothing fails silently: a tick that fails every attempt lands its event in the
template's dead-letter queue (Lambda's on-failure record, as the local scheduler makes it),
and `agentworks ops redrive` replays it on the tick, which then succeeds; a notifier batch
given up is named in its queue and redrive reads its records from the stream again."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from agentworks_cli.main import main
from agentworks_local import lambda_seam
from agentworks_local.failure_destinations import FailureQueues, stream_batch_record
from agentworks_local.handlers import FunctionError, FunctionHost
from agentworks_local.scheduler import Scheduler
from agentworks_local.stream_poller import StreamPoller, stream_sources
from tests.support.handlers import invoke_function


class HandlerHost(FunctionHost):
    """The template's functions, run through the tests' handler loader (IAM attribution)."""

    def invoke(self, logical_id: str, event: dict[str, Any]) -> Any:
        try:
            return invoke_function(logical_id, event)
        except Exception as error:
            raise FunctionError(logical_id, error) from error


@pytest.fixture
def invoked(stack: Any) -> list[tuple[str, Any]]:
    """(function, event) of every invocation of the tick and the notifier that reaches
    moto's Lambda (redrive's). The state machines' tasks are left out: moto runs each
    execution on a thread of its own, and one an earlier test on this worker started may
    still be calling its step runner through this process-wide seam."""
    seen: list[tuple[str, Any]] = []

    def dispatch(name: str, event: Any) -> Any:
        logical_id = stack.resources.logical_id_of(name)
        if logical_id in ("TickFunction", "NotifierFunction"):
            seen.append((logical_id, event))
        return invoke_function(logical_id, event)

    lambda_seam.install(dispatch)
    return seen


def _messages(url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return [json.loads(m["Body"]) for m in got.get("Messages", [])]


def _redrive(capsys: Any, *args: str) -> tuple[int, str]:
    code = main(["ops", "redrive", *args])
    return code, capsys.readouterr().out


def _printed_json(out: str) -> Any:
    """The command's JSON, after what the replayed handler printed (its EMF and log lines)."""
    return json.loads(out[out.index("[\n") :])


def test_a_failing_tick_lands_in_the_dead_letter_queue_and_redrive_replays_it(
    stack, invoked, monkeypatch, capsys
):
    queue = stack.resources.queues["TickDeadLetterQueue"]
    sweep = stack.services.lifecycle.sweep
    attempts: list[int] = []
    failing = True

    def flaky_sweep() -> Any:
        attempts.append(1)
        if failing:
            raise RuntimeError("messages table unavailable")
        return sweep()

    monkeypatch.setattr(stack.services.lifecycle, "sweep", flaky_sweep)
    warnings: list[str] = []
    scheduler = Scheduler(
        HandlerHost(),
        None,
        warn=warnings.append,
        failures=FailureQueues(boto3.client("sqs"), stack.resources),
    )
    scheduler.tick_once()

    # EventInvokeConfig: the first attempt and 2 retries, then the event is kept.
    assert len(attempts) == 3 and scheduler.dead_lettered == 1
    assert "kept in agentworks-TickDeadLetterQueue" in warnings[0]
    [record] = _messages(queue)
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestContext"]["functionArn"].startswith(
        stack.resources.function_arns["TickFunction"]
    )
    event = record["requestPayload"]
    assert event["detail-type"] == "Scheduled Event"
    assert record["responsePayload"]["errorMessage"] == "messages table unavailable"

    # --dry-run says what it would replay and changes nothing.
    code, out = _redrive(capsys, "--queue-url", queue, "--dry-run")
    assert code == 0 and "would replay  invocation    agentworks-TickFunction" in out
    assert invoked == [] and len(_messages(queue)) == 1

    # A replay that fails again keeps the message (and says so, exit 1).
    code, out = _redrive(capsys, "--queue-url", queue)
    assert code == 1 and "failed again: messages table unavailable" in out
    assert len(_messages(queue)) == 1

    failing = False
    code, out = _redrive(capsys, "--queue-url", queue, "--json")
    assert code == 0
    [replay] = _printed_json(out)
    assert (replay["kind"], replay["outcome"]) == ("invocation", "replayed")
    assert invoked[-1] == ("TickFunction", event)  # the stored event, on the tick
    assert _messages(queue) == []


def test_an_undelivered_event_is_replayed_on_its_target(stack, invoked, capsys):
    """EventBridge's own dead letters are the event, the target in TARGET_ARN."""
    queue = stack.resources.queues["TickDeadLetterQueue"]
    arn = stack.resources.function_arns["TickFunction"]
    boto3.client("sqs").send_message(
        QueueUrl=queue,
        MessageBody=json.dumps({"detail-type": "Scheduled Event", "detail": {}}),
        MessageAttributes={"TARGET_ARN": {"DataType": "String", "StringValue": arn}},
    )
    code, out = _redrive(capsys, "--queue-url", queue.rsplit("/", 1)[1])  # by name
    assert code == 0 and "replayed      event" in out
    assert invoked == [("TickFunction", {"detail-type": "Scheduled Event", "detail": {}})]


def _failing_notifier(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> Any:
        raise RuntimeError("API Gateway unavailable")

    monkeypatch.setattr(stack.services.push.notifier, "notify", refuse)


def test_a_notifier_batch_given_up_is_named_in_its_queue(stack, agents, api, monkeypatch):
    _failing_notifier(stack, monkeypatch)
    host = HandlerHost()
    failures = FailureQueues(boto3.client("sqs"), stack.resources)
    from agentworks_local.moto_patches import dynamodb_lock

    poller = StreamPoller(
        host, stream_sources(host, stack.resources), dynamodb_lock(), print, failures=failures
    )
    agents.named("bob")
    sender = agents.connection("sender")["token"]
    assert api("POST", "/v1/messages", sender, {"target": "agent:bob", "message": "hi"}).status
    [source] = [
        s
        for s in poller.sources
        if s.function == "NotifierFunction" and s.table == stack.settings.messages_table
    ]
    assert poller.poll(source) == 1
    [record] = _messages(stack.resources.queues["NotifierFailedBatchesQueue"])
    info = record["DDBStreamBatchInfo"]
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert info["batchSize"] == 1 and info["startSequenceNumber"] == info["endSequenceNumber"]
    assert info["streamArn"].startswith(
        f"arn:aws:dynamodb:us-east-1:123456789012:table/{stack.resources.tables['MessagesTable']}"
    )


def test_redrive_reads_a_given_up_batch_from_the_stream_again(stack, agents, api, invoked, capsys):
    from tests.support.streams import StreamReader

    reader = StreamReader(stack.client, stack.resources.tables["MessagesTable"])
    agents.named("bob")
    sender = agents.connection("sender")["token"]
    sent = api("POST", "/v1/messages", sender, {"target": "agent:bob", "message": "hi"})
    assert sent.status == 201
    batch = [r for r in reader.records() if r["dynamodb"]["Keys"]["sk"]["S"].startswith("M#")]
    stream_arn = stack.client.describe_table(TableName=stack.resources.tables["MessagesTable"])[
        "Table"
    ]["LatestStreamArn"]
    shard = reader.client.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]
    failure = FunctionError("NotifierFunction", RuntimeError("API Gateway unavailable"))
    record = stream_batch_record(
        stack.resources.function_arns["NotifierFunction"],
        stream_arn,
        shard["ShardId"],
        batch,
        failure,
        4,
        stack.clock.now(),
    )
    queue = stack.resources.queues["NotifierFailedBatchesQueue"]
    boto3.client("sqs").send_message(QueueUrl=queue, MessageBody=json.dumps(record))

    code, out = _redrive(capsys, "--queue-url", queue)
    assert code == 0, out
    [(function, event)] = invoked
    assert function == "NotifierFunction"
    replayed = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
    assert replayed[0] == batch[0]["dynamodb"]["SequenceNumber"]
    assert replayed[-1] == batch[-1]["dynamodb"]["SequenceNumber"]
    assert all(r["eventSourceARN"] == stream_arn for r in event["Records"])
    assert _messages(queue) == []
