"""What Lambda does with work an asynchronous path gave up on, done locally.

On AWS, EventBridge (and EventBridge Scheduler) invoke the tick asynchronously: Lambda
retries a failed invocation `EventInvokeConfig.MaximumRetryAttempts` times, then sends an
*invocation record* (the event, the error) to the on-failure destination. A stream event
source out of retries sends a *batch record* instead: which shard and sequence numbers it
gave up on, not the records. Here the scheduler and the stream poller do the same with the
template's queues (moto's SQS), so `agentworks ops redrive` finds what AWS would leave.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from agentworks_local.handlers import FunctionError
from agentworks_local.template import LocalResources, load_template, resources_of_type

# Lambda's default for asynchronous invocations without an EventInvokeConfig.
DEFAULT_ASYNC_RETRIES = 2


def on_failure_queue(destination_config: Any, resources: LocalResources) -> str | None:
    """The queue URL a `DestinationConfig.OnFailure` names (`!GetAtt <Queue>.Arn`), if any."""
    target = ((destination_config or {}).get("OnFailure") or {}).get("Destination")
    if isinstance(target, dict) and "Fn::GetAtt" in target:
        return resources.queues.get(target["Fn::GetAtt"][0])
    return None


@dataclass(frozen=True)
class AsyncInvokeConfig:
    retries: int  # after the first attempt
    queue_url: str | None  # the on-failure destination (None: the event is dropped)


def async_invoke_configs(
    resources: LocalResources, template: dict[str, Any] | None = None
) -> dict[str, AsyncInvokeConfig]:
    """Each function's retries and on-failure queue for asynchronous invocations."""
    template = template if template is not None else load_template()
    configs = {}
    for logical_id, resource in resources_of_type(template, "AWS::Serverless::Function").items():
        config = (resource.get("Properties") or {}).get("EventInvokeConfig") or {}
        configs[logical_id] = AsyncInvokeConfig(
            int(config.get("MaximumRetryAttempts", DEFAULT_ASYNC_RETRIES)),
            on_failure_queue(config.get("DestinationConfig"), resources),
        )
    return configs


def _timestamp(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def _failure(error: FunctionError) -> tuple[dict[str, Any], dict[str, Any]]:
    cause = error.error
    response = {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
    return response, {"errorMessage": str(cause), "errorType": type(cause).__name__}


def invocation_record(
    function_arn: str, event: Any, error: FunctionError, attempts: int, now: float
) -> dict[str, Any]:
    """Lambda's on-failure record of an asynchronous invocation whose retries ran out."""
    response, payload = _failure(error)
    return {
        "version": "1.0",
        "timestamp": _timestamp(now),
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"{function_arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": response,
        "responsePayload": payload,
    }


def stream_batch_record(
    function_arn: str,
    stream_arn: str,
    shard_id: str,
    batch: list[dict[str, Any]],
    error: FunctionError,
    attempts: int,
    now: float,
) -> dict[str, Any]:
    """Lambda's on-failure record of a DynamoDB stream batch: where it lies, not its records."""
    response, _ = _failure(error)
    arrivals = [r["dynamodb"].get("ApproximateCreationDateTime", now) for r in batch]
    return {
        "version": "1.0",
        "timestamp": _timestamp(now),
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": function_arn,
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": attempts,
        },
        "responseContext": response,
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": batch[0]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": batch[-1]["dynamodb"]["SequenceNumber"],
            "approximateArrivalOfFirstRecord": _timestamp(float(min(arrivals))),
            "approximateArrivalOfLastRecord": _timestamp(float(max(arrivals))),
            "batchSize": len(batch),
            "streamArn": stream_arn,
        },
    }


class FailureQueues:
    """Sends failure records to the template's queues (moto's SQS in the local stack)."""

    def __init__(self, sqs: Any, resources: LocalResources, clock: Any = time.time) -> None:
        self._sqs = sqs
        self.resources = resources
        self._clock = clock
        self.async_configs = async_invoke_configs(resources)

    def retries(self, function: str) -> int:
        config = self.async_configs.get(function)
        return config.retries if config else DEFAULT_ASYNC_RETRIES

    def invocation_failed(
        self, function: str, event: Any, error: FunctionError, attempts: int
    ) -> str | None:
        """Keeps the failed invocation as Lambda would; the queue URL, or None (dropped)."""
        config = self.async_configs.get(function)
        if config is None or config.queue_url is None:
            return None
        arn = self.resources.function_arns[function]
        record = invocation_record(arn, event, error, attempts, self._clock())
        self._sqs.send_message(QueueUrl=config.queue_url, MessageBody=json.dumps(record))
        return config.queue_url

    def batch_failed(self, queue_url: str, record: dict[str, Any]) -> None:
        self._sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(record))
