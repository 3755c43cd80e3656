"""`agentworks usage` against the real local stack (issue 12, item 4): sends counted from the
messages table's stream (the stack's poller feeds the notifier, as Lambda does on AWS),
reads by the API, shown by the CLI with the server's model; refused without `admin`."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    return Cli(local_stack)


def _today(cli: Cli) -> dict[str, Any]:
    return dict(cli.ok("usage", "--days", "1", "--json").json()["days"][-1])


def test_usage_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    s = uuid.uuid4().hex[:8]
    sender, reader = tmp_path / "sender.json", tmp_path / "reader.json"
    for name, path in ((f"u-sender-{s}", sender), (f"u-reader-{s}", reader)):
        cli.ok(
            "connections", "create", "--name", name,
            "--scopes", "messages:read,messages:send", "--save-config", str(path),
        )  # fmt: skip
    cli.ok("messages", "register", "--agent", f"u-reader-{s}", config=reader)
    before = _today(cli)  # the stack may be shared: compare with what it counted so far
    for n in range(3):
        cli.ok("messages", "send", "--target", f"agent:u-reader-{s}", "--message", f"m{n}",
               config=sender)  # fmt: skip
    cli.ok("messages", "read", "--agent", f"u-reader-{s}", config=reader)

    deadline = time.monotonic() + 20
    while True:  # the stream poller runs in the background
        today = _today(cli)
        if today["messages_sent"] - before["messages_sent"] >= 3:
            break
        assert time.monotonic() < deadline, today
        time.sleep(0.2)
    assert today["messages_sent"] - before["messages_sent"] == 3
    assert today["messages_read"] - before["messages_read"] == 3
    assert today["stored_bytes"] > before["stored_bytes"]

    table = cli.ok("usage").out.splitlines()
    assert table[1].split()[:3] == ["DAY", "SENT", "READ"] and table[-3].startswith("total")
    refused = cli("usage", config=sender)
    assert refused.code == 1 and "'admin' scope" in refused.err
