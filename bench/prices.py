"""The cost of a million messages, priced with the layer's list prices (agentworks.prices).

The workload: each message is sent singly and read once, in pages of 10. Every HTTP
request is one API function invocation, which reads the connection to authenticate it
(no caching: revocation counts on the next request). SQS standard, doing the same job
unbatched, makes three requests per message (send, receive, delete).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# The list prices live in the layer: GET /v1/usage estimates an account's cost with the
# same table (re-exported here for the bench's modules).
from agentworks.prices import (
    DYNAMODB_PER_MILLION_READ_UNITS,
    DYNAMODB_PER_MILLION_WRITE_UNITS,
    HTTP_API_PER_MILLION_REQUESTS,
    LAMBDA_ARM_PER_GB_SECOND,
    LAMBDA_PER_MILLION_REQUESTS,
    MINUTES_PER_MONTH,
    SQS_PER_MILLION_REQUESTS,
    SQS_REQUESTS_PER_MESSAGE,
    WEBSOCKET_PER_MILLION_CONNECTION_MINUTES,
    WEBSOCKET_PER_MILLION_MESSAGES,
)
from agentworks_local.template import load_template
from bench.meter import Tally

__all__ = [
    "DYNAMODB_PER_MILLION_READ_UNITS",
    "DYNAMODB_PER_MILLION_WRITE_UNITS",
    "HTTP_API_PER_MILLION_REQUESTS",
    "LAMBDA_ARM_PER_GB_SECOND",
    "LAMBDA_PER_MILLION_REQUESTS",
    "MINUTES_PER_MONTH",
    "SQS_PER_MILLION_REQUESTS",
    "SQS_REQUESTS_PER_MESSAGE",
    "WEBSOCKET_PER_MILLION_CONNECTION_MINUTES",
    "WEBSOCKET_PER_MILLION_MESSAGES",
    "Workload",
    "cost_per_million",
    "memory_mb",
]


def memory_mb(function: str) -> int:
    """A function's MemorySize in template.yaml (its own, else the Globals one)."""
    template = load_template()
    own = template["Resources"][function]["Properties"].get("MemorySize")
    return int(own if own is not None else template["Globals"]["Function"]["MemorySize"])


@dataclass(frozen=True)
class Workload:
    send: Tally  # one send (route only)
    read_page: Tally  # one page read (route only)
    authentication: Tally  # the token check every request makes
    send_seconds: float  # median handler durations, authentication included
    read_seconds: float
    api_memory_mb: int
    page_size: int = 10


def _gb_seconds(seconds: float, memory: int) -> float:
    billed = math.ceil(seconds * 1000) / 1000  # Lambda bills duration per started ms
    return billed * memory / 1024


def cost_per_million(w: Workload) -> dict[str, Any]:
    """Dollar cost of one million messages, by service, and the SQS baseline."""
    reads_per_message = 1 / w.page_size
    requests = 1 + reads_per_message  # HTTP requests per message
    apigw = requests * HTTP_API_PER_MILLION_REQUESTS
    gb_seconds = _gb_seconds(w.send_seconds, w.api_memory_mb) + reads_per_message * _gb_seconds(
        w.read_seconds, w.api_memory_mb
    )
    lambda_ = requests * LAMBDA_PER_MILLION_REQUESTS + gb_seconds * 1e6 * LAMBDA_ARM_PER_GB_SECOND
    write_units = (
        w.send.write_units
        + w.send.gsi_write_units
        + reads_per_message * (w.read_page.write_units + w.read_page.gsi_write_units)
    )
    read_units = (
        w.send.read_units
        + reads_per_message * w.read_page.read_units
        + requests * w.authentication.read_units
    )
    dynamodb = (
        write_units * DYNAMODB_PER_MILLION_WRITE_UNITS
        + read_units * DYNAMODB_PER_MILLION_READ_UNITS
    )
    total = apigw + lambda_ + dynamodb
    sqs = SQS_REQUESTS_PER_MESSAGE * SQS_PER_MILLION_REQUESTS
    return {
        "cost_per_million_usd": total,
        "cost_apigw_per_million": apigw,
        "cost_lambda_per_million": lambda_,
        "cost_dynamodb_per_million": dynamodb,
        "cost_dynamodb_writes_per_million": write_units * DYNAMODB_PER_MILLION_WRITE_UNITS,
        "cost_sqs_per_million": sqs,
        "cost_ratio_vs_sqs": total / sqs,
        "lambda_gb_seconds_per_message": gb_seconds,
    }
