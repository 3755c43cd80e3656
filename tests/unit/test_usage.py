"""Usage counters and their cost (issue 12, item 4), without a stack: the days bound at and
past each limit, the arithmetic of days and shards, what a stream batch counts and how
often it writes, the cost model priced from the bench's own price table, the notifier's
and push function's narrow grant, and `agentworks usage` reading the server's model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworks import limits, prices
from agentworks.errors import InvalidInput
from agentworks.item_size import item_size
from agentworks.messaging.stream_usage import AccountCache, StreamUsage, stored_messages
from agentworks.push.listener_store import Listener
from agentworks.push.subjects import whole_name
from agentworks.usage import costs
from agentworks.usage.counts import Counts, day_end, day_of, days_back, shard_of
from agentworks.usage.reports import check_days
from agentworks.usage.usage_store import update_request
from agentworks_local.template import load_template
from tests.unit.test_cli_commands import run


def test_days_at_and_past_each_limit() -> None:
    assert check_days(None) == limits.USAGE_DAYS_DEFAULT
    assert check_days(1) == 1
    assert check_days(limits.USAGE_DAYS_MAX) == limits.USAGE_DAYS_MAX
    for past in (0, limits.USAGE_DAYS_MAX + 1, -1):
        with pytest.raises(InvalidInput) as refused:
            check_days(past)
        assert refused.value.details == {"field": "days"}


def test_days_are_utc_and_counted_back_from_today() -> None:
    assert day_of(1_800_000_000) == "2027-01-15"  # 08:00 UTC
    assert day_of(1_800_000_000 + 16 * 3600) == "2027-01-16"  # midnight UTC has passed
    assert days_back("2027-03-01", 3) == ["2027-02-27", "2027-02-28", "2027-03-01"]
    assert len(days_back("2027-03-01", limits.USAGE_DAYS_MAX)) == limits.USAGE_DAYS_MAX
    assert day_end("2027-01-15") == 1_800_000_000 + 16 * 3600


def test_shards_are_stable_and_in_range() -> None:
    picked = {shard_of(f"call_{n}") for n in range(200)}
    assert picked == set(range(limits.USAGE_SHARDS))
    assert shard_of("call_7") == shard_of("call_7")


def test_a_write_adds_only_what_is_not_zero_and_expires_after_the_longest_window() -> None:
    request = update_request("work", "acct_1", "2027-01-15", 3, Counts(messages_read=4))
    assert request["Key"] == {"pk": {"S": "USAGE#acct_1"}, "sk": {"S": "2027-01-15#3"}}
    assert request["UpdateExpression"] == (
        "ADD #messages_read :messages_read SET expires_ttl = if_not_exists(expires_ttl, :ttl)"
    )
    ttl = int(request["ExpressionAttributeValues"][":ttl"]["N"])
    assert ttl == day_end("2027-01-15") + limits.USAGE_RETENTION_SECONDS
    assert limits.USAGE_RETENTION_SECONDS > limits.USAGE_DAYS_MAX * limits.DAY_SECONDS


def _record(pk: str, sk: str, event: str = "INSERT", created: int = 1_800_000_000_123) -> dict:
    image = {
        "pk": {"S": pk},
        "sk": {"S": sk},
        "body": {"S": "hello"},
        "created_at": {"N": str(created)},
    }
    return {"eventID": f"{pk}{sk}", "eventName": event, "dynamodb": {"NewImage": image}}


def test_only_stored_messages_count_with_their_stored_size() -> None:
    batch = [
        _record("CONV#c1", "M#0000000001"),
        _record("CONV#c1", "META"),  # the conversation item
        _record("MBX#agent", "0000000001"),  # a mailbox copy
        _record("CONV#c1", "M#0000000001", event="MODIFY"),  # a receipt moving
    ]
    [message] = stored_messages(batch)
    image = batch[0]["dynamodb"]["NewImage"]
    assert message.conversation == "c1" and message.created_ms == 1_800_000_000_123
    assert message.stored_bytes == item_size(image) + prices.DYNAMODB_ITEM_OVERHEAD_BYTES


class FakeStore:
    def __init__(self, failing: bool = False) -> None:
        self.added: list[tuple[str, str, int, Counts]] = []
        self.failing = failing

    def add(self, account_id: str, day: str, shard: int, counts: Counts) -> None:
        if self.failing:
            raise RuntimeError("throttled past retries")
        self.added.append((account_id, day, shard, counts))


def test_a_batch_writes_once_per_account_day_whatever_it_holds() -> None:
    lookups: list[str] = []

    def account_of(conversation: str) -> str | None:
        lookups.append(conversation)
        return {"c1": "acct_a", "c2": "acct_a", "c3": "acct_b"}.get(conversation)

    store = FakeStore()
    usage = StreamUsage(store, account_of)  # type: ignore[arg-type]
    day_two = 1_800_000_000_123 + limits.DAY_SECONDS * 1000
    batch = [_record("CONV#c1", f"M#{n:010d}") for n in range(1, 51)]
    batch += [_record("CONV#c2", "M#0000000001"), _record("CONV#c3", "M#0000000001")]
    batch += [_record("CONV#c1", "M#0000000051", created=day_two)]
    batch += [_record("CONV#gone", "M#0000000001")]  # its conversation is no longer stored
    notices = {("acct_b", "2027-01-15"): Counts(push_notices=2)}
    assert usage.count(batch, notices) == 3
    written = {(a, d): c for a, d, _, c in store.added}
    size = stored_messages(batch[:1])[0].stored_bytes
    assert written[("acct_a", "2027-01-15")] == Counts(messages_sent=51, stored_bytes=51 * size)
    assert written[("acct_b", "2027-01-15")] == Counts(
        messages_sent=1, stored_bytes=size, push_notices=2
    )
    assert written[("acct_a", "2027-01-16")].messages_sent == 1
    # One lookup per conversation, however many of its messages the batch holds.
    assert sorted(lookups) == ["c1", "c2", "c3", "gone"]
    usage.count([_record("CONV#c1", "M#0000000052")])
    assert sorted(lookups) == ["c1", "c2", "c3", "gone"]


def test_a_failed_usage_write_is_dropped_not_raised() -> None:
    """Raising would make Lambda retry the batch: every notice again, every account-day
    already written counted twice."""
    usage = StreamUsage(FakeStore(failing=True), lambda c: "acct_a")  # type: ignore[arg-type]
    assert usage.count([_record("CONV#c1", "M#0000000001")]) == 0


def test_the_account_cache_is_bounded() -> None:
    cache = AccountCache(lambda c: f"acct_{c}", size=2)
    for conversation in ("a", "b", "c"):
        assert cache(conversation) == f"acct_{conversation}"
    assert list(cache._known) == ["b", "c"]


def test_a_listener_counts_the_time_its_socket_was_open() -> None:
    lifetime = limits.PUSH_CONNECTION_SECONDS + limits.PUSH_LISTENER_TTL_MARGIN_SECONDS
    opened = 1_800_000_000
    listener = Listener("ws1", whole_name("agent_1"), "acct_a", "conn_1", opened + lifetime)
    assert listener.connected_seconds(opened + 90.5) == 90
    assert listener.connected_seconds(opened - 5) == 0
    # API Gateway closes a WebSocket after 2 hours: never more than that.
    assert listener.connected_seconds(opened + lifetime + 999) == limits.PUSH_CONNECTION_SECONDS


LIST_PRICES = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "aws_list_prices.json").read_text()
)


def test_the_price_table_is_the_published_list() -> None:
    table = {
        "http_api_per_million_requests": prices.HTTP_API_PER_MILLION_REQUESTS,
        "websocket_per_million_messages": prices.WEBSOCKET_PER_MILLION_MESSAGES,
        "websocket_per_million_connection_minutes": prices.WEBSOCKET_PER_MILLION_CONNECTION_MINUTES,
        "lambda_per_million_requests": prices.LAMBDA_PER_MILLION_REQUESTS,
        "lambda_arm_per_gb_second": prices.LAMBDA_ARM_PER_GB_SECOND,
        "dynamodb_per_million_write_request_units": prices.DYNAMODB_PER_MILLION_WRITE_UNITS,
        "dynamodb_per_million_read_request_units": prices.DYNAMODB_PER_MILLION_READ_UNITS,
        "dynamodb_storage_per_gb_month": prices.DYNAMODB_STORAGE_PER_GB_MONTH,
        "step_functions_per_thousand_state_transitions": (
            prices.STEP_FUNCTIONS_PER_MILLION_TRANSITIONS / 1000
        ),
        "sqs_per_million_requests": prices.SQS_PER_MILLION_REQUESTS,
    }
    for name, used in table.items():
        assert used == pytest.approx(LIST_PRICES[name]), name


def test_the_cost_model_prices_with_the_published_list() -> None:
    listed, million = LIST_PRICES, 1_000_000
    transitions = costs.estimate(Counts(state_transitions=million))
    assert transitions.total_usd == pytest.approx(
        1000 * listed["step_functions_per_thousand_state_transitions"]
    )
    minutes = costs.estimate(Counts(push_seconds=60 * million))
    assert minutes.api_gateway_usd == pytest.approx(
        listed["websocket_per_million_connection_minutes"]
    )
    stored = costs.estimate(Counts(stored_bytes=1024**3))  # one GiB, kept 7 days of 30
    assert stored.storage_usd == pytest.approx(listed["dynamodb_storage_per_gb_month"] * 7 / 30)
    sends = costs.estimate(Counts(messages_sent=million))
    assert sends.api_gateway_usd == pytest.approx(listed["http_api_per_million_requests"])
    assert sends.dynamodb_usd == pytest.approx(  # a send: 3 write and 3 read units
        3 * listed["dynamodb_per_million_write_request_units"]
        + 3 * listed["dynamodb_per_million_read_request_units"]
    )
    assert costs.estimate(Counts()).total_usd == 0
    assert costs.estimate(Counts(messages_read=10)).total_usd == 0  # priced per page


def test_the_cost_model_uses_the_template_memory_sizes() -> None:
    template = load_template()
    default = template["Globals"]["Function"]["MemorySize"]

    def memory(function: str) -> int:
        own = template["Resources"][function]["Properties"].get("MemorySize")
        return int(own if own is not None else default)

    assert memory("ApiFunction") == costs.API_MEMORY_MB
    assert memory("NotifierFunction") == costs.NOTIFIER_MEMORY_MB
    assert memory("StepRunnerFunction") == costs.STEP_RUNNER_MEMORY_MB


def test_the_notifier_and_push_function_may_add_to_usage_items_only() -> None:
    """Their work-table grant is UpdateItem under a dynamodb:LeadingKeys condition: a
    usage item yes, any other item of the work table (a call record) no."""
    from tests.support.aws_calls import Permission
    from tests.support.iam import allowed, role_of_function, role_statements, stack_resolver
    from tests.support.sam import translated_template

    translated = translated_template()
    resolve = stack_resolver(translated)
    work = resolve({"Fn::GetAtt": ["WorkTable", "Arn"]})
    for function in ("NotifierFunction", "PushFunction"):
        statements = role_statements(translated, role_of_function(translated, function), resolve)
        assert allowed(statements, Permission("dynamodb:UpdateItem", work, ("USAGE#acct_1",)))
        assert not allowed(statements, Permission("dynamodb:UpdateItem", work, ("CALL#c1",)))
        assert not allowed(statements, Permission("dynamodb:UpdateItem", work))
        assert not allowed(statements, Permission("dynamodb:PutItem", work, ("USAGE#acct_1",)))


# ---- agentworks usage ----

REPORT: dict[str, Any] = {
    "account_id": "acc1",
    "first_day": "2027-01-14",
    "last_day": "2027-01-15",
    "days": [
        {"day": "2027-01-14", "estimated_cost_usd": 0.0},
        {
            "day": "2027-01-15",
            "messages_sent": 5,
            "messages_read": 6,
            "read_requests": 3,
            "function_calls": 2,
            "state_transitions": 9,
            "stored_bytes": 3 * 1024 * 1024,
            "push_minutes": 1.5,
            "push_notices": 3,
            "mcp_tool_calls": 4,
            "relay_mcp_tool_calls": 2,
            "estimated_cost_usd": 0.000321,
        },
    ],
    "total": {"messages_sent": 5, "messages_read": 6, "function_calls": 2},
    "estimated_cost": {
        "total_usd": 0.000321,
        "api_gateway_usd": 0.0001,
        "lambda_usd": 0.0001,
        "dynamodb_usd": 0.0001,
        "step_functions_usd": 0.000021,
        "storage_usd": 0.0,
    },
    "prices": "Estimated from AWS list prices.",
}


def test_usage_command_sends_account_and_days_and_prints_a_day_table(server, config, capsys):
    server.on("GET", "/v1/usage", REPORT)
    code, out, _ = run(capsys, "usage", "--account", "acc1", "--days", "2")
    assert code == 0
    assert server.last.query == {"account": ["acc1"], "days": ["2"]}
    lines = out.splitlines()
    assert lines[0] == "usage of acc1, 2027-01-14 to 2027-01-15 (UTC days)"
    assert lines[1].split() == [
        "DAY", "SENT", "READ", "CALLS", "TRANSITIONS", "STORED", "PUSH_MIN", "NOTICES",
        "MCP_CALLS", "RELAY_MCP", "EST_USD",
    ]  # fmt: skip
    assert lines[3].split() == [
        "2027-01-15", "5", "6", "2", "9", "3.0", "MB", "1.5", "3", "4", "2", "0.0003",
    ]  # fmt: skip
    assert lines[4].split()[:4] == ["total", "5", "6", "2"]
    assert "estimated cost: 0.0003 USD" in out


def test_usage_command_defaults_and_json(server, config, capsys):
    server.on("GET", "/v1/usage", REPORT)
    code, out, _ = run(capsys, "usage", "--json")
    assert code == 0 and server.last.query == {}
    shown = json.loads(out)
    # Read with the server's own model: fields it does not send come with their defaults.
    assert shown["days"][0]["messages_sent"] == 0 and shown["total"]["push_minutes"] == 0.0


def test_usage_command_refused_and_misshapen_answers(server, config, capsys):
    refused = {
        "error": {"code": "forbidden", "message": "This connection lacks the 'admin' scope."}
    }
    server.on("GET", "/v1/usage", refused, status=403)
    code, _, err = run(capsys, "usage")
    assert code == 1 and "lacks the 'admin' scope" in err
    server.on("GET", "/v1/usage", {"account_id": "acc1"})
    code, _, err = run(capsys, "usage")
    assert code == 1 and "does not have the shape this CLI reads (UsageReport" in err
