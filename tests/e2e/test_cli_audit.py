"""`agentworks audit list` and `agentworks webhooks …` against the real local stack (C6): a
request to a Crew under review is audited, and the stack's stream poller feeds the webhooks
function as Lambda's does on AWS, so a subscribed local receiver gets the signed event and
`webhooks deliveries` shows the attempt. The receiver listens on 127.0.0.1: this module's
stack runs with `--allow-loopback-webhooks`, the option that lets a local receiver in."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LOOPBACK, LocalStack, running_local_stack
from tests.e2e.test_cli_crew_messages import _crew_file
from tests.e2e.test_cli_messages import Cli
from tests.integration.test_conversation_webhooks import Receiver

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with running_local_stack(tmp_path_factory, LOOPBACK) as stack:
        yield stack


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    return Cli(local_stack)


def test_audit_and_webhooks_through_the_cli(
    cli: Cli, local_stack: LocalStack, tmp_path: Path
) -> None:
    receiver = Receiver()
    try:
        name = f"audited-{uuid.uuid4().hex[:6]}"
        hook = cli.ok(
            "webhooks", "create", "--url", receiver.url, "--events", "request_needs_review",
            "--json",
        ).json()  # fmt: skip
        key = cli.ok("workflow", "webhook-key").out.splitlines()[0]
        shown = cli.ok("webhooks", "create", "--url", receiver.url, "--events", "agent_asked").out
        # Which key signs it and where to get it, never the key itself (issue 29).
        assert (
            f"signed in X-AgentWorks-Signature with the account's webhook key {key[:4]}…" in shown
        )
        assert "the whole key: agentworks workflow webhook-key" in shown and key not in shown
        cli.ok("webhooks", "delete", shown.split()[0])
        cli.ok("crews", "create", "--file", str(_crew_file(tmp_path, name, "review")))
        sent = cli.ok(
            "conversations", "request", "--target", f"crew:{name}", "--message", "Clause 2?",
            "--json",
        ).json()  # fmt: skip
        page = cli.ok("audit", "list", "--inbox", sent["inbox_id"], "--json").json()
        assert [e["action"] for e in page["entries"]] == ["message_sent", "request_state"]
        assert page["entries"][1]["state"] == "waiting_for_review"
        table = cli.ok("audit", "list", "--inbox", sent["inbox_id"]).out.splitlines()
        assert table[0].split()[:3] == ["AT", "CONVERSATION", "ACTION"]
        assert "waiting_for_review" in table[2]

        deadline = time.monotonic() + 20
        while not receiver.received:  # the stream poller runs in the background
            assert time.monotonic() < deadline, "no webhook arrived"
            time.sleep(0.2)
        # One entry; an attempt whose answer came too late on a loaded machine is tried
        # again (at least once, as documented), so the same entry may arrive twice.
        [event] = {e["audit_entry_id"]: e for e in receiver.events()}.values()
        assert event["event"] == "request_needs_review"
        assert event["message_id"] == sent["message_id"]
        shown = cli.ok("webhooks", "deliveries", hook["webhook_id"], "--json").json()
        [delivery] = shown["deliveries"]
        assert delivery["state"] == "delivered" and delivery["attempts"][-1]["status_code"] == 200
        assert cli.ok("webhooks", "delete", "--id", hook["webhook_id"]).out.startswith("deleted")
        assert "may go to this machine (--allow-loopback-webhooks)" in local_stack.stdout()
    finally:
        receiver.server.shutdown()
