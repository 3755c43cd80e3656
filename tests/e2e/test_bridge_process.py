"""The bridge as its own process against `agentworks dev` (issue 10): the push channel's
WebSocket wakes it, the Stop hook delivers, and kill -9 at any moment never produces a
second turn for a message (the journal and the watermark survive; catch-up re-reads)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentworks_cli.bridge.local_socket import ask
from tests.e2e.api_helpers import api, named_agent
from tests.e2e.conftest import LocalStack

pytestmark = pytest.mark.e2e

AGENTWORKS = Path(sys.executable).with_name("agentworks")
SESSION_ID = "5e55a0e0-0000-4000-8000-00000000b1d9"


class BridgeRun:
    def __init__(self, home: Path, config: Path, env: dict[str, str]) -> None:
        self.home, self.config = home, config
        self.env = {**env, "AGENTWORKS_BRIDGE_HOME": str(home)}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.home.parent / "bridge-run.log").open("ab")
        self.process = subprocess.Popen(
            [str(AGENTWORKS), "--config", str(self.config), "bridge", "run"],
            env=self.env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while ask(self.home / "bridge.sock", {"op": "status"}, timeout=1) is None:
            assert self.process.poll() is None, "the bridge exited"
            assert time.monotonic() < deadline, "the bridge did not start"
            time.sleep(0.1)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(20)

    def stop_hook(self) -> dict[str, Any] | None:
        done = subprocess.run(
            [str(AGENTWORKS), "bridge", "hook", "stop", "--provider", "claude"],
            input=json.dumps({"session_id": SESSION_ID, "stop_hook_active": False}),
            capture_output=True, text=True, env=self.env, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None

    def forget_read_positions(self) -> None:
        import sqlite3

        with sqlite3.connect(self.home / "journal.sqlite3") as db:
            db.execute("UPDATE inboxes SET cursor = NULL")
            db.execute("UPDATE attachments SET mailbox_cursor = NULL")

    def read_positions_saved(self) -> bool:
        import sqlite3

        with sqlite3.connect(f"file:{self.home / 'journal.sqlite3'}?mode=ro", uri=True) as db:
            return bool(
                db.execute(
                    "SELECT COUNT(*) FROM attachments WHERE mailbox_cursor IS NOT NULL"
                ).fetchone()[0]
            )

    def queued(self) -> int:
        import sqlite3

        with sqlite3.connect(f"file:{self.home / 'journal.sqlite3'}?mode=ro", uri=True) as db:
            return int(
                db.execute("SELECT COUNT(*) FROM messages WHERE state='queued'").fetchone()[0]
            )


@pytest.fixture
def bridge(local_stack: LocalStack, tmp_path: Path) -> Any:
    run = BridgeRun(tmp_path / "bridge", local_stack.admin_config, dict(os.environ))
    run.start()
    try:
        yield run
    finally:
        run.stop()


def _listening(local_stack: LocalStack, name: str) -> bool:
    status, listed, _ = api(local_stack, "GET", "/v1/agents?listening=true",
                            local_stack.admin_token)  # fmt: skip
    assert status == 200, listed
    return any(a["agent_name"] == name and a["listening"] for a in listed["agents"])


def _wait(predicate: Any, timeout: float = 15.0) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.02)
    return time.monotonic() - started


def test_the_push_channel_wakes_the_bridge_and_kill_9_never_doubles_a_turn(
    local_stack: LocalStack, bridge: BridgeRun
):
    attached = ask(bridge.home / "bridge.sock", {
        "op": "attach", "provider": "claude", "session_id": SESSION_ID,
        "name": "bridged", "purpose": "Takes messages in a chat",
    })  # fmt: skip
    assert attached and attached.get("name") == "bridged", attached
    sender = named_agent(local_stack, "pusher")
    _wait(lambda: _listening(local_stack, "bridged"))  # its listener is connected
    sent = {"target": "agent:bridged", "message": "woken by the push channel"}
    status, first, _ = api(local_stack, "POST", "/v1/messages", sender, sent)
    assert status == 201, first
    _wait(lambda: bridge.queued() == 1)  # (how fast: `make bench`, push_wake_latency_s)

    # kill -9 with the message queued: after the restart it is delivered exactly once.
    bridge.kill()
    bridge.start()
    turn = bridge.stop_hook()
    assert turn and "woken by the push channel" in turn["reason"]
    # kill -9 after the delivery, as if before its read position was saved: the restart's
    # catch-up reads the message again (its inbox cursor is saved anew once it has), and the
    # watermark drops it: no second turn.
    bridge.kill()
    bridge.forget_read_positions()
    bridge.start()
    _wait(lambda: bridge.read_positions_saved())
    assert bridge.stop_hook() is None
    # And a message sent while it was down arrives after the restart, once.
    bridge.kill()
    more = {"inbox_id": first["inbox_id"], "message": "sent while the bridge was down"}
    assert api(local_stack, "POST", "/v1/messages", sender, more)[0] == 201
    bridge.start()
    _wait(lambda: bridge.queued() == 1)
    turn = bridge.stop_hook()
    assert turn and "sent while the bridge was down" in turn["reason"]
    assert "woken by the push channel" not in turn["reason"]
    assert bridge.stop_hook() is None


def test_cli_attach_installs_the_hooks_and_agents_lists_the_chat(
    local_stack: LocalStack, bridge: BridgeRun, tmp_path: Path
):
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    own = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make lint"}]}]}}
    (project / ".claude" / "settings.local.json").write_text(json.dumps(own))

    def cli(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(AGENTWORKS), "--config", str(local_stack.admin_config), *words],
            capture_output=True, text=True, env=bridge.env, timeout=60,
        )  # fmt: skip

    done = cli("attach", "lister", "Lists things", "--provider", "claude", "--session",
               "11111111-2222-4333-8444-555555555555", "--project", str(project))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "attached as lister" in done.stdout
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    stops = [h["command"] for group in settings["hooks"]["Stop"] for h in group["hooks"]]
    assert stops[0] == "make lint" and "bridge hook stop --provider claude" in stops[1]
    assert {"UserPromptSubmit", "SessionStart", "SessionEnd"} <= set(settings["hooks"])
    listed = cli("agents")
    assert listed.returncode == 0 and "lister" in listed.stdout and "hooks" in listed.stdout
    assert cli("detach", "--provider", "claude", "--session",
               "11111111-2222-4333-8444-555555555555").returncode == 0  # fmt: skip
    assert "lister" not in cli("agents").stdout
