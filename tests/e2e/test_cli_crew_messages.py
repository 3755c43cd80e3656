"""Messages to a Crew through the `agentworks` CLI against the local stack (M1, M8–M10): a
caller messages a Crew under review, an admin sees it waiting and releases it, the Crew's
answer arrives in the caller's inbox, a wakeup is scheduled and cancelled, and a Crew turned
off refuses with the reason."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

CREW_YAML = """\
name: {name}
instructions: Answer questions about contract clauses.
messaging: {messaging}
adapter:
  type: scripted
  rules:
    - when: "clause (\\\\d+)"
      reply: "Clause {{match.1}} covers termination."
    - default: I can only discuss clauses.
"""


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    return Cli(local_stack)


def _crew_file(tmp_path: Path, name: str, messaging: str) -> Path:
    path = tmp_path / f"crew-{messaging}.yaml"
    path.write_text(CREW_YAML.format(name=name, messaging=messaging))
    return path


def test_message_to_a_crew_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    name = f"contracts-{uuid.uuid4().hex[:6]}"
    cli.ok("crews", "create", "--file", str(_crew_file(tmp_path, name, "review")))
    caller = tmp_path / "caller.json"
    cli.ok(
        "connections", "create", "--name", f"caller-{uuid.uuid4().hex[:6]}",
        "--scopes", "messages:read,messages:send", "--save-config", str(caller),
    )  # fmt: skip

    sent = cli.ok(
        "messages", "send", "--target", f"crew:{name}", "--message", "What does clause 7 say?",
        "--json",
        config=caller,
    ).json()  # fmt: skip
    assert sent["receipt"] == "stored"

    # M10 review: the admin sees it waiting (no body) and releases it.
    waiting = cli.ok("messages", "state", "--target", f"crew:{name}").out
    assert "pending_review" in waiting and "clause 7" not in waiting
    assert f"crews release --crew {name} --message-id {sent['message_id']}" in waiting
    released = cli.ok("crews", "release", "--crew", name, "--message-id", sent["message_id"])
    assert released.out.startswith(f"released {sent['message_id']} to crew:{name}: run run_")

    # The Crew's answer arrives in the caller's own inbox.
    page = cli.ok(
        "messages", "read", "--inbox", sent["inbox_id"], "--wait", "25", "--json", config=caller
    ).json()
    [answer] = page["messages"]
    assert answer["sender"] == f"crew:{name}"
    assert answer["body"] == "Clause 7 covers termination."

    # M9: a wakeup in that conversation, then cancelled (the local tick never fires it).
    scheduled = cli.ok(
        "messages", "wakeup", "schedule", "--inbox", sent["inbox_id"], "--delay", "3600",
        "--json",
        config=caller,
    ).json()  # fmt: skip
    assert scheduled["state"] == "scheduled"
    cancelled = cli.ok(
        "messages", "wakeup", "cancel", "--wakeup-id", scheduled["wakeup_id"], config=caller
    )
    assert cancelled.out.startswith(f"cancelled wakeup {scheduled['wakeup_id']}")

    # M10 off: the reply is refused with the reason and who can turn it on.
    cli.ok("crews", "update", "--file", str(_crew_file(tmp_path, name, "off")))
    refused = cli(
        "messages", "send", "--inbox", sent["inbox_id"], "--message", "And clause 8?",
        config=caller,
    )  # fmt: skip
    assert refused.code == 1, refused
    assert "messaging switch is off" in refused.err and "account admin" in refused.err
    assert "agentworks crews update --file" in refused.err


def test_requests_and_notes_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    """C1, C2: a note starts nothing; a request waits for review, is cancelled by its asker,
    and a bad deadline is a usage error before anything is sent."""
    name = f"contracts-{uuid.uuid4().hex[:6]}"
    cli.ok("crews", "create", "--file", str(_crew_file(tmp_path, name, "review")))
    caller = tmp_path / "caller.json"
    cli.ok(
        "connections", "create", "--name", f"caller-{uuid.uuid4().hex[:6]}",
        "--scopes", "messages:read,messages:send", "--save-config", str(caller),
    )  # fmt: skip
    note = cli.ok(
        "conversations", "note", "--target", f"crew:{name}", "--message", "Signed in 2021.",
        "--json", config=caller,
    ).json()  # fmt: skip
    assert (
        "no requests"
        in cli.ok("conversations", "show", "--inbox", note["inbox_id"], config=caller).out
    )
    asked = cli.ok(
        "conversations", "request", "--inbox", note["inbox_id"], "--message", "Clause 7?",
        "--deadline", "2h", config=caller,
    )  # fmt: skip
    assert asked.out.startswith("sent request msg_")
    request_id = asked.out.split()[2]
    shown = cli.ok("conversations", "show", "--inbox", note["inbox_id"], config=caller).out
    assert request_id in shown and "Waiting for review" in shown
    cancelled = cli.ok("conversations", "cancel", request_id, config=caller).out
    assert cancelled == f"request {request_id}: Cancelled\n"
    bad = cli(
        "conversations", "request", "--inbox", note["inbox_id"], "--message", "x",
        "--deadline", "soon", config=caller,
    )  # fmt: skip
    assert bad.code == 2 and "give a duration such as 90s, 30m, 2h or 3d" in bad.err
    too_long = cli(
        "conversations", "request", "--inbox", note["inbox_id"], "--message", "x",
        "--deadline", "8d", config=caller,
    )  # fmt: skip
    assert too_long.code == 1 and "1 minute to 7 days" in too_long.err


def test_conversations_show_has_the_answer_text(cli: Cli, tmp_path: Path) -> None:
    """Issue 29: where a request stands and what it was answered, in one command (the
    conversation positional, its older --inbox form still working)."""
    name = f"contracts-{uuid.uuid4().hex[:6]}"
    cli.ok("crews", "create", "--file", str(_crew_file(tmp_path, name, "on")))
    asked = cli.ok(
        "conversations", "request", "--target", f"crew:{name}", "--message", "Clause 4?",
        "--json",
    ).json()  # fmt: skip
    cli.ok("messages", "read", "--inbox", asked["inbox_id"], "--after", "0", "--wait", "25")
    shown = cli.ok("conversations", "show", asked["inbox_id"]).out
    assert f"answer to {asked['message_id']} from crew:{name}:" in shown
    assert "  Clause 4 covers termination." in shown
    assert cli.ok("conversations", "show", "--inbox", asked["inbox_id"]).out == shown
    typo = name.replace("contracts", "contracst")
    refused = cli("conversations", "request", "--target", f"crew:{typo}", "--message", "Hi")
    assert refused.code == 4, refused
    assert f"No Crew named '{typo}'; did you mean '{name}'?" in refused.err
    assert "The names: agentworks crews list" in refused.err
