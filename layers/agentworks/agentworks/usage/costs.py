"""An account's estimated cost: its counters times what each operation takes (requests,
Lambda time, capacity units, transitions…) times the list prices `make bench` uses
(agentworks.prices).

What each operation takes comes from `make bench`'s measurements (docs/benchmarks.md):
the bench prices a million messages both ways and reports the ratio
(`usage_estimate_vs_measured`), so a drift between this model and the code shows there.
Left out: free tiers, CloudWatch logs and metrics, X-Ray, the Crews' models (their own
bill), the step runner's time inside an agent turn (it depends on the agent), and the
workflow and relay machines (not counted yet, see docs/usage.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from agentworks import prices
from agentworks.usage.counts import Counts

# MemorySize in template.yaml (tests/unit/test_usage.py checks they agree).
API_MEMORY_MB = 512
NOTIFIER_MEMORY_MB = 256
STEP_RUNNER_MEMORY_MB = 512
# Median handler times `make bench` measures (authentication included), rounded up.
SEND_SECONDS = 0.030
READ_PAGE_SECONDS = 0.090
NOTIFY_SECONDS = 0.015
CALL_ADMISSION_SECONDS = 0.060
MESSAGE_RETENTION_MONTHS = 7 / prices.DAYS_PER_MONTH  # every message is kept 7 days
GIB = 1024**3


@dataclass(frozen=True)
class Takes:
    """What one unit of a counter takes from each billed service."""

    http_requests: float = 0.0
    lambda_requests: float = 0.0
    gb_seconds: float = 0.0
    write_units: float = 0.0
    read_units: float = 0.0
    transitions: float = 0.0
    websocket_messages: float = 0.0
    connection_minutes: float = 0.0
    gb_months: float = 0.0

    def __mul__(self, n: float) -> Takes:
        return Takes(**{f.name: getattr(self, f.name) * n for f in fields(self)})

    def __add__(self, other: Takes) -> Takes:
        return Takes(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )


def _gb_seconds(seconds: float, memory_mb: int) -> float:
    return seconds * memory_mb / 1024


# A send: the API request and its token check, the head Query and the message's put (2
# units for 1 KB).
SEND = Takes(
    http_requests=1,
    lambda_requests=1,
    gb_seconds=_gb_seconds(SEND_SECONDS, API_MEMORY_MB),
    write_units=2,
    read_units=1 + 1,
)
# What the messages table's stream adds to a send, worst case (a quiet stream): a notifier
# invocation for it alone, its listeners' Query and its usage write.
NOTIFY = Takes(
    lambda_requests=1,
    gb_seconds=_gb_seconds(NOTIFY_SECONDS, NOTIFIER_MEMORY_MB),
    write_units=1,
    read_units=1,
)
# Per unit of each counter.
PER_UNIT: dict[str, Takes] = {
    "messages_sent": SEND + NOTIFY,
    "stored_bytes": Takes(gb_months=MESSAGE_RETENTION_MONTHS / GIB),
    "messages_read": Takes(),  # priced per page (read_requests)
    # A page of 10 (both sides examined, head Query, token check) and its usage write.
    "read_requests": Takes(
        http_requests=1,
        lambda_requests=1,
        gb_seconds=_gb_seconds(READ_PAGE_SECONDS, API_MEMORY_MB),
        write_units=1,
        read_units=8 + 1,
    ),
    # Admission (one transaction), the call's saves and its end (one transaction with its
    # usage); two step-runner invocations (one turn, the finish) at their start-up cost.
    "function_calls": Takes(
        http_requests=1,
        lambda_requests=3,
        gb_seconds=_gb_seconds(CALL_ADMISSION_SECONDS, API_MEMORY_MB)
        + 2 * _gb_seconds(CALL_ADMISSION_SECONDS, STEP_RUNNER_MEMORY_MB),
        write_units=6 + 2 * 2 + 4 + 2,
        read_units=6,
    ),
    "state_transitions": Takes(transitions=1),
    "push_seconds": Takes(connection_minutes=1 / 60),
    "push_notices": Takes(websocket_messages=1),
    # Relay code's tool call: its request (API function) and its record with its usage (one
    # transaction); the run, its release and the server are read, the run again while it
    # waits.
    "relay_mcp_tool_calls": Takes(
        http_requests=1,
        lambda_requests=1,
        gb_seconds=_gb_seconds(CALL_ADMISSION_SECONDS, API_MEMORY_MB),
        write_units=2 * 2,
        read_units=4,
    ),
    # Inside the turn's invocation: the server's item (a read; its secret is Secrets
    # Manager's, its time the turn's own). No state, no request of its own.
    "mcp_tool_calls": Takes(read_units=1),
}


@dataclass(frozen=True)
class Cost:
    api_gateway_usd: float
    lambda_usd: float
    dynamodb_usd: float
    step_functions_usd: float
    storage_usd: float

    @property
    def total_usd(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))


def takes(counts: Counts) -> Takes:
    total = Takes()
    for name, unit in PER_UNIT.items():
        total = total + unit * getattr(counts, name)
    return total


def estimate(counts: Counts) -> Cost:
    """The list-price cost of `counts` (USD)."""
    return price(takes(counts))


def price(t: Takes) -> Cost:
    per_million = 1e-6
    return Cost(
        api_gateway_usd=(
            t.http_requests * prices.HTTP_API_PER_MILLION_REQUESTS
            + t.websocket_messages * prices.WEBSOCKET_PER_MILLION_MESSAGES
            + t.connection_minutes * prices.WEBSOCKET_PER_MILLION_CONNECTION_MINUTES
        )
        * per_million,
        lambda_usd=t.lambda_requests * prices.LAMBDA_PER_MILLION_REQUESTS * per_million
        + t.gb_seconds * prices.LAMBDA_ARM_PER_GB_SECOND,
        dynamodb_usd=(
            t.write_units * prices.DYNAMODB_PER_MILLION_WRITE_UNITS
            + t.read_units * prices.DYNAMODB_PER_MILLION_READ_UNITS
        )
        * per_million,
        step_functions_usd=t.transitions
        * prices.STEP_FUNCTIONS_PER_MILLION_TRANSITIONS
        * per_million,
        storage_usd=t.gb_months * prices.DYNAMODB_STORAGE_PER_GB_MONTH,
    )
