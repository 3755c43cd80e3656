"""`agentworks dev` keeps its state: restarts after a clean stop and after `kill -9` in the
middle of a stream of acknowledged sends lose nothing that was acknowledged, duplicate
nothing, keep every conversation's sequence numbers gapless, and old tokens keep working.
A damaged data file is refused with nothing overwritten; two stacks never share a folder.
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from http.client import HTTPException
from pathlib import Path
from typing import Any

import pytest

from agentworks import limits
from tests.e2e.api_helpers import api, named_agent, read_all, read_pages, seq_of
from tests.e2e.conftest import LocalStack, _dev_command, free_port, start_local_stack
from tests.e2e.test_cli_functions import CREW_YAML
from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

SENDERS = 4
# Below the conversation's rate limit, so every send of the stream is admitted.
SENDS_PER_CONVERSATION = limits.RATE_LIMIT_MESSAGES - 5


def _durable(workdir: Path, data: Path, *more: str) -> LocalStack:
    workdir.mkdir(parents=True, exist_ok=True)
    return start_local_stack(workdir, options=("--data-dir", str(data), *more))


def _dev_exits(workdir: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`agentworks dev` that is expected to refuse to start: how it ended."""
    return subprocess.run(
        _dev_command(free_port(), workdir / "other.json", options),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _stored(stack: LocalStack, token: str, agent: str) -> list[str]:
    """Every message id sent to `agent`: its mailbox holds each conversation's first
    message, whose reply address is the inbox holding the rest."""
    return [
        message_id
        for first in _mailbox(stack, token, agent)
        for message_id in read_all(stack, token, first["reply_address"])
    ]


def _mailbox(stack: LocalStack, token: str, agent: str) -> list[dict[str, Any]]:
    """Every message in `agent`'s mailbox, page by page."""
    return read_pages(stack, token, {"agent_name": agent})


class SendStream:
    """SENDERS threads, each sending into its own conversation one message after another;
    `acked` holds every message whose 201 reached the client."""

    def __init__(self, stack: LocalStack, token: str, target: str) -> None:
        self.stack, self.token, self.target = stack, token, target
        self.acked: list[str] = []
        self.conversations: list[str] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._send) for _ in range(SENDERS)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(60)

    def _send(self) -> None:
        body: dict[str, str] = {"target": self.target}
        for n in range(SENDS_PER_CONVERSATION):
            try:
                status, sent, _ = api(
                    self.stack, "POST", "/v1/messages", self.token, {**body, "message": str(n)}
                )
            except (OSError, HTTPException):
                # The stack died under this request (before answering, or with the answer cut
                # off after its headers): the client never got a receipt to count.
                return
            assert status == 201, sent
            with self._lock:
                self.acked.append(sent["message_id"])
                if n == 0:
                    self.conversations.append(sent["conversation_id"])
            body = {"inbox_id": sent["inbox_id"]}


def _check_nothing_lost_or_repeated(stored: list[str], acked: list[str]) -> None:
    assert len(stored) == len(set(stored)), "a message was stored twice"
    assert set(acked) <= set(stored), f"{len(set(acked) - set(stored))} acknowledged lost"
    by_conversation: dict[str, list[int]] = defaultdict(list)
    for message_id in stored:
        by_conversation[message_id[4:30]].append(seq_of(message_id))
    for seqs in by_conversation.values():
        assert sorted(seqs) == list(range(1, len(seqs) + 1)), "a sequence number gap"


@pytest.mark.parametrize("stop", ["kill -9", "clean stop"])
def test_a_restart_mid_stream_keeps_every_acknowledged_message(tmp_path: Path, stop: str) -> None:
    data = tmp_path / "data"
    suffix = uuid.uuid4().hex[:6]
    first = _durable(tmp_path / "first", data)
    try:
        worker = named_agent(first, f"worker-{suffix}")
        reviewer = named_agent(first, f"reviewer-{suffix}")
        stream = SendStream(first, worker, f"agent:reviewer-{suffix}")
        stream.start()
        time.sleep(random.uniform(0.5, 2.5))  # a random moment of the stream
        if stop == "kill -9":
            first.process.kill()
            first.process.wait(10)
        else:
            assert first.stop() == 0
        stream.join()
    finally:
        if first.running:
            first.process.kill()
    assert stream.acked, "the stream never got going"

    second = _durable(tmp_path / "second", data)
    try:
        assert "restored" in second.stdout()
        # The tokens issued before the restart still work, and nothing is lost or doubled.
        stored = _stored(second, reviewer, f"reviewer-{suffix}")
        _check_nothing_lost_or_repeated(stored, stream.acked)
        # A conversation goes on where it stopped: the next number, no gap.
        opener = _mailbox(second, reviewer, f"reviewer-{suffix}")[0]
        status, sent, _ = api(
            second,
            "POST",
            "/v1/messages",
            reviewer,
            {"inbox_id": opener["reply_address"], "message": "back"},
        )
        assert status == 201, sent
        conversation = opener["message_id"][4:30]
        assert seq_of(sent["message_id"]) == 1 + sum(1 for m in stored if m[4:30] == conversation)
    finally:
        assert second.stop() == 0


def test_damage_is_refused_and_two_stacks_never_share_a_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = _durable(tmp_path / "first", data)
    try:
        named_agent(first, "someone")
        # A second stack on the same folder is refused at once, naming the first.
        second = _dev_exits(tmp_path, "--data-dir", str(data))
        assert second.returncode == 2
        assert f"another local stack (pid {first.process.pid})" in second.stderr
    finally:
        assert first.stop() == 0

    snapshot = data / "snapshot"
    damaged = bytearray(snapshot.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    snapshot.write_bytes(bytes(damaged))
    files = {p.name: p.read_bytes() for p in data.iterdir() if p.name != "lock"}
    refused = _dev_exits(tmp_path, "--data-dir", str(data))
    assert refused.returncode == 1
    assert "is damaged" in refused.stderr and "nothing was changed" in refused.stderr
    assert {p.name: p.read_bytes() for p in data.iterdir() if p.name != "lock"} == files


def test_reset_asks_first_and_then_starts_empty(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = _durable(tmp_path / "first", data)
    try:
        old_token = named_agent(first, "someone")
    finally:
        assert first.stop() == 0
    unconfirmed = _dev_exits(tmp_path, "--data-dir", str(data), "--reset")
    assert unconfirmed.returncode == 2 and "add --yes" in unconfirmed.stderr
    assert (data / "snapshot").exists()  # nothing deleted without a yes

    fresh = _durable(tmp_path / "fresh", data, "--reset", "--yes")
    try:
        assert "no saved state" in fresh.stdout()
        status, body, _ = api(fresh, "GET", "/v1/whoami", old_token)
        assert status == 401, body
    finally:
        assert fresh.stop() == 0


def _status(cli: Cli, caller: Path, call_id: str, wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status = cli.ok("functions", "status", "--call-id", call_id, "--json", config=caller)
        found: dict[str, Any] = status.json()
        if found["state"] == wanted or time.monotonic() > deadline:
            assert found["state"] == wanted, found
            return found
        time.sleep(0.3)


def _scheduled_wakeup(stack: LocalStack) -> dict[str, Any]:
    """A conversation with the Crew and a wakeup in it, two minutes from now."""
    admin = stack.admin_token
    status, sent, _ = api(
        stack, "POST", "/v1/messages", admin, {"target": "crew:approvals", "message": "hi"}
    )
    assert status == 201, sent
    status, scheduled, _ = api(
        stack, "POST", "/v1/wakeups", admin, {"inbox_id": sent["inbox_id"], "delay_seconds": 120}
    )
    assert status == 201, scheduled
    return _wakeups(stack)[scheduled["wakeup_id"]]


def _wakeups(stack: LocalStack) -> dict[str, dict[str, Any]]:
    status, state, _ = api(stack, "GET", "/v1/crews/approvals/state", stack.admin_token)
    assert status == 200, state
    return {w["wakeup_id"]: w for inbox in state["inboxes"] for w in inbox["wakeups"]}


def _repoint(config: Path, stack: LocalStack) -> None:
    """The restarted stack listens on another port: the caller's config follows it."""
    saved = json.loads(config.read_text())
    config.write_text(json.dumps({**saved, "url": stack.url}))


@pytest.mark.parametrize("stop", ["kill -9", "clean stop"])
def test_a_call_waiting_for_input_is_answered_after_a_restart(tmp_path: Path, stop: str) -> None:
    """F7 across a restart: the question survives, the same token answers it, and the call
    completes with the answer (its execution waits again where it waited)."""
    data = tmp_path / "data"
    first = _durable(tmp_path / "first", data)
    caller = tmp_path / "caller.json"
    try:
        cli = Cli(first)
        crew = tmp_path / "crew.yaml"
        crew.write_text(CREW_YAML.format(name="approvals"))
        cli.ok("crews", "create", "--file", str(crew))
        cli.ok(
            "connections", "create", "--name", "caller", "--scopes",
            "functions:call,functions:read", "--save-config", str(caller),
        )  # fmt: skip
        called = cli.ok(
            "functions", "call", "--target", "crew:approvals", "--function", "confirm",
            "--args", '{"action": "deploy"}', "--json", config=caller,
        ).json()  # fmt: skip
        asked = _status(cli, caller, called["call_id"], "input_required")
        wakeup = _scheduled_wakeup(first)
        if stop == "kill -9":
            first.process.kill()
            first.process.wait(10)
        else:
            assert first.stop() == 0
    finally:
        if first.running:
            first.process.kill()

    second = _durable(tmp_path / "second", data)
    try:
        assert "waiting calls resumed: 1;" in second.stdout()
        _repoint(caller, second)
        cli = Cli(second)
        waiting = _status(cli, caller, called["call_id"], "input_required")
        request_id = waiting["pending_inputs"][0]["request_id"]
        assert request_id == asked["pending_inputs"][0]["request_id"]
        cli.ok(
            "functions", "reply", "--call-id", called["call_id"], "--request-id", request_id,
            "--answer", "yes", config=caller,
        )  # fmt: skip
        done = _status(cli, caller, called["call_id"], "succeeded")
        assert done["result"] == {"confirmed": "yes"}
        # M9: the wakeup scheduled before the restart is still there, due when it was.
        assert _wakeups(second)[wakeup["wakeup_id"]] == wakeup
    finally:
        assert second.stop() == 0


# A Relay whose second step is in flight when the stack is killed (issue 9 with issue 7's
# restarts): the first step's checkpoint survives, the second is uncertain.
HELD_RELAY = {
    "relay.yaml": "name: held\nfunctions:\n  - {name: run, entrypoint: main:run}\n",
    "main.py": (
        "import time\n"
        "from agentworks_relay import attempt, step\n\n"
        "def hold():\n"
        "    if attempt() == 1:\n"
        "        time.sleep(60)  # the stack is killed meanwhile\n"
        "    return 'held'\n\n"
        "async def run(INPUT):\n"
        "    first = await step('first', lambda: 'once')\n"
        "    return {'first': first, 'held': await step('held', hold)}\n"
    ),
}


def _relay_run(stack: LocalStack, run_id: str, until: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, body, _ = api(stack, "GET", f"/api/relay-runs/{run_id}", stack.admin_token)
        assert status == 200, body
        if until(body):
            return dict(body)
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def test_a_relay_run_killed_mid_step_resumes_from_its_checkpoints(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = _durable(tmp_path / "first", data)
    try:
        status, body, _ = api(
            first, "POST", "/api/relays", first.admin_token, {"files": HELD_RELAY}
        )
        assert status == 200, body
        start = {"function": "run", "input": {}, "idempotency_key": "k"}
        status, run, _ = api(first, "POST", "/api/relays/held/runs", first.admin_token, start)
        assert status == 202, run
        _relay_run(
            first, run["run_id"], lambda r: [s["name"] for s in r["steps"]] == ["first", "held"]
        )
        first.process.kill()  # kill -9 while the second step runs
        first.process.wait(10)
    finally:
        if first.running:
            first.process.kill()

    second = _durable(tmp_path / "second", data)
    try:
        assert "Relay runs resumed from their checkpoints: 1." in second.stdout()
        done = _relay_run(second, run["run_id"], lambda r: r["terminal"])
        # The completed step was not run again; the one in flight may or may not have taken
        # effect, and is not declared safe: a person decides (relays retry --replay-uncertain).
        assert done["status"] == "needs_reconciliation", done
        assert done["evidence"]["step"] == "held"
        assert [(s["name"], s["status"], s["attempt"]) for s in done["steps"]] == [
            ("first", "completed", 1),
            ("held", "uncertain", 1),
        ]
    finally:
        assert second.stop() == 0
