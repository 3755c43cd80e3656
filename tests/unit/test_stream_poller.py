"""The local stack's stream poller hands every event source of a table its own records (on
AWS each event source mapping reads the stream on its own): the work table's stream feeds
both the webhooks function and the notifier (the web console's run notices), and neither
may take the other's records."""

from __future__ import annotations

import threading
from typing import Any

from agentworks_local.stream_poller import StreamPoller, StreamSource


class _Host:
    def __init__(self) -> None:
        self.got: dict[str, list[str]] = {}

    def invoke(self, function: str, event: dict[str, Any]) -> None:
        keys = [r["dynamodb"]["Keys"]["pk"]["S"] for r in event["Records"]]
        self.got.setdefault(function, []).extend(keys)


def _record(pk: str) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": pk}}}}


def test_two_functions_on_one_stream_each_get_what_their_filters_pass(monkeypatch) -> None:
    host = _Host()
    audit = StreamSource("WebhooksFunction", "work", 1, 0, ())
    runs = StreamSource(
        "NotifierFunction",
        "work",
        100,
        0,
        ({"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "CALL#"}]}}}},),
    )
    other = StreamSource("NotifierFunction", "messages", 100, 0, ())
    poller = StreamPoller(host, [audit, runs, other], threading.Lock(), print)  # type: ignore[arg-type]
    shards = {"work": [_record("AUDIT#a"), _record("CALL#call_1")], "messages": []}
    taken: list[str] = []

    def take(table: str) -> tuple[list[dict[str, Any]], tuple[str, str]]:
        taken.append(table)
        found, shards[table] = shards[table], []
        return found, ("", "")

    monkeypatch.setattr(poller, "_take", take)
    assert poller.poll_table("work") == 3  # two records to one function, one to the other
    assert taken == ["work"]  # the shard is read once for both
    assert host.got == {
        "WebhooksFunction": ["AUDIT#a", "CALL#call_1"],
        "NotifierFunction": ["CALL#call_1"],
    }
