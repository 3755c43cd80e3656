"""The seed's direct-message flow through the `agentworks` CLI, run as a subprocess against
the local stack (M1–M8, A2, A3): the commands exactly as the product docs write them."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

NOT_AUTHORIZED = "error: not authorized: the token is missing, invalid, expired or revoked\n"


def _agentworks() -> list[str]:
    script = Path(sys.executable).with_name("agentworks")
    if script.exists():
        return [str(script)]
    found = shutil.which("agentworks")
    return [found] if found else [sys.executable, "-m", "agentworks_cli.main"]


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli:
    """Runs `agentworks …` as its own process with the stack's environment (admin config)."""

    def __init__(self, local_stack: Any) -> None:
        self.env = dict(local_stack.env)
        self.command = _agentworks()

    def __call__(self, *argv: str, config: Path | None = None, stdin: str | None = None) -> Result:
        prefix = ["--config", str(config)] if config is not None else []
        done = subprocess.run(
            [*self.command, *prefix, *argv],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def ok(self, *argv: str, config: Path | None = None, stdin: str | None = None) -> Result:
        result = self(*argv, config=config, stdin=stdin)
        assert result.code == 0, (argv, result)
        assert "Traceback" not in result.err
        return result


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    return Cli(local_stack)


def _suffix() -> str:
    # The stack may be shared by several tests: names must not collide.
    return uuid.uuid4().hex[:8]


def _connection(cli: Cli, name: str, path: Path) -> str:
    created = cli.ok(
        "connections", "create", "--name", name,
        "--scopes", "messages:read,messages:send", "--save-config", str(path), "--json",
    ).json()  # fmt: skip
    assert created["token"].startswith("aw1.")
    return str(created["connection_id"])


def test_seed_flow_through_the_cli(cli: Cli, local_stack: Any, tmp_path: Path) -> None:
    """A2 M4 M1 M6 M3 M7 M8: connections, registration, first contact, mailbox read,
    reply in the same inbox, receipts and inbox state — all through the CLI."""
    s = _suffix()
    worker_cfg, reviewer_cfg = tmp_path / "worker" / "config.json", tmp_path / "reviewer.json"
    worker_name, reviewer_name = f"worker-{s}", f"reviewer-{s}"

    # The admin config comes from AGENTWORKS_CONFIG (the fixture's env), no flag needed.
    admin = cli.ok("whoami", "--json").json()
    assert "admin" in admin["scopes"]

    # Human output of create: the id, the token once and the warning; config saved 0600.
    created = cli.ok(
        "connections", "create", "--name", worker_name,
        "--scopes", "messages:read,messages:send", "--save-config", str(worker_cfg),
    )  # fmt: skip
    assert "token:   aw1." in created.out and "shown only once" in created.out
    assert stat.S_IMODE(worker_cfg.stat().st_mode) == 0o600
    saved = json.loads(worker_cfg.read_text())
    assert saved["url"].rstrip("/") == local_stack.url.rstrip("/")
    worker_id = cli.ok("whoami", "--json", config=worker_cfg).json()["connection_id"]
    assert f"created connection {worker_id}" in created.out.splitlines()
    _connection(cli, reviewer_name, reviewer_cfg)

    registered = cli.ok(
        "messages", "register", "--agent", reviewer_name, "--purpose", "Reviews work",
        config=reviewer_cfg,
    )  # fmt: skip
    assert f"registered {reviewer_name}" in registered.out
    cli.ok("messages", "register", "--agent", worker_name, config=worker_cfg)
    listed = cli.ok("messages", "list", config=worker_cfg).out
    assert any(
        line.split()[0] == reviewer_name and line.endswith("Reviews work")
        for line in listed.splitlines()
    ), listed

    sent = cli.ok(
        "messages", "send", "--agent", worker_name, "--target", f"agent:{reviewer_name}",
        "--message", "Ready for review", "--json",
        config=worker_cfg,
    ).json()  # fmt: skip
    assert sent["receipt"] == "stored" and sent["replayed"] is False

    # The mailbox: first contacts, each with the inbox to reply in.
    page = cli.ok(
        "messages", "read", "--agent", reviewer_name, "--after", "0", "--wait", "5", "--json",
        config=reviewer_cfg,
    ).json()  # fmt: skip
    assert page["kind"] == "mailbox"
    [first] = page["messages"]
    assert first["body"] == "Ready for review"
    assert first["sender"] == f"agent:{worker_name}"
    assert first["message_id"] == sent["message_id"]
    reply_address = first["reply_address"]
    assert reply_address and reply_address != sent["inbox_id"]

    human = cli.ok(
        "messages", "read", "--agent", reviewer_name, "--after", "0", "--wait", "5",
        config=reviewer_cfg,
    ).out  # fmt: skip
    assert f"reply_address: {reply_address}" in human.splitlines()
    assert "  | Ready for review" in human.splitlines()
    assert f"next cursor: {page['next_cursor']}" in human.splitlines()
    assert f"--inbox {reply_address}" in human  # the copy-paste reply command

    replied = cli.ok(
        "messages", "send", "--agent", reviewer_name, "--inbox", reply_address,
        "--message", "-",
        config=reviewer_cfg, stdin="Review received\n",
    )  # fmt: skip
    assert "sent message " in replied.out

    back = cli.ok(
        "messages", "read", "--agent", worker_name, "--inbox", sent["inbox_id"],
        "--after", "0", "--json",
        config=worker_cfg,
    ).json()  # fmt: skip
    assert back["kind"] == "inbox"
    assert [m["body"] for m in back["messages"]] == ["Review received"]
    assert back["messages"][0]["sender"] == f"agent:{reviewer_name}"

    for delivery in ("admitted", "processed"):
        acked = cli.ok(
            "messages", "ack", "--message-id", first["message_id"], "--delivery", delivery,
            config=reviewer_cfg,
        )  # fmt: skip
        assert acked.out == f"message {first['message_id']} receipt: {delivery}\n"

    state = cli.ok(
        "messages", "state", "--inbox", sent["inbox_id"], "--agent", worker_name, "--json",
        config=worker_cfg,
    ).json()  # fmt: skip
    assert state["delivery_records"][0]["message_id"] == sent["message_id"]
    assert state["delivery_records"][0]["receipt"] == "processed"
    assert "body" not in json.dumps(state["delivery_records"])
    human_state = cli.ok(
        "messages", "state", "--inbox", sent["inbox_id"], "--agent", worker_name,
        config=worker_cfg,
    ).out  # fmt: skip
    assert any(
        line.split()[:1] == [sent["message_id"]] and line.split()[-1] == "processed"
        for line in human_state.splitlines()
    ), human_state

    gone = cli.ok("messages", "unregister", "--agent", worker_name, config=worker_cfg)
    assert gone.out == f"unregistered {worker_name}\n"


def test_send_to_an_unknown_agent_exits_4_with_one_line(cli: Cli, tmp_path: Path) -> None:
    """A5: unknown looks like unavailable; the CLI says so in one line and exits 4."""
    worker_cfg = tmp_path / "w.json"
    _connection(cli, f"w-{_suffix()}", worker_cfg)
    result = cli(
        "messages", "send", "--target", "agent:nobody", "--message", "hi", config=worker_cfg
    )
    assert result.code == 4
    assert result.err.startswith("error: ") and result.err.count("\n") == 1
    assert result.out == ""

    as_json = cli(
        "--json", "messages", "send", "--target", "agent:nobody", "--message", "hi",
        config=worker_cfg,
    )  # fmt: skip
    assert as_json.code == 4 and as_json.err.count("\n") == 1
    assert as_json.json()["error"]["code"] == "unavailable"


def test_revoked_connection_is_not_authorized(cli: Cli, tmp_path: Path) -> None:
    """A3: revocation takes effect at once for the CLI too."""
    temp_cfg = tmp_path / "temp.json"
    connection_id = _connection(cli, f"temp-{_suffix()}", temp_cfg)
    cli.ok("whoami", config=temp_cfg)
    revoked = cli.ok("connections", "revoke", connection_id)
    assert f"revoked connection {connection_id}" in revoked.out
    listed = cli.ok("connections", "list", "--json").json()["connections"]
    assert {c["connection_id"]: c["status"] for c in listed}[connection_id] == "revoked"

    refused = cli("whoami", config=temp_cfg)
    assert refused.code == 1
    assert refused.err == NOT_AUTHORIZED
    refused = cli("messages", "list", config=temp_cfg)
    assert (refused.code, refused.err) == (1, NOT_AUTHORIZED)


def test_submission_id_retry_prints_the_same_message_id(cli: Cli, tmp_path: Path) -> None:
    """M2: a retried send with the same submission id and text returns the original."""
    s = _suffix()
    worker_cfg, reviewer_cfg = tmp_path / "w.json", tmp_path / "r.json"
    _connection(cli, f"w-{s}", worker_cfg)
    _connection(cli, f"r-{s}", reviewer_cfg)
    cli.ok("messages", "register", "--agent", f"reviewer-{s}", config=reviewer_cfg)
    send = (
        "messages", "send", "--target", f"agent:reviewer-{s}",
        "--message", "Ready", "--submission-id", f"sub-{s}",
    )  # fmt: skip
    first = cli.ok(*send, "--json", config=worker_cfg).json()
    again = cli.ok(*send, "--json", config=worker_cfg).json()
    assert again["message_id"] == first["message_id"]
    assert (first["replayed"], again["replayed"]) == (False, True)
    human = cli.ok(*send, config=worker_cfg).out
    assert f"sent message {first['message_id']} " in human
    assert "replayed" in human

    changed = cli(
        "messages", "send", "--target", f"agent:reviewer-{s}", "--message", "Different",
        "--submission-id", f"sub-{s}",
        config=worker_cfg,
    )  # fmt: skip
    assert changed.code == 1 and changed.err.startswith("error: ")
    assert changed.err.count("\n") == 1


def test_an_unknown_agent_name_suggests_the_nearest_and_the_directory(cli: Cli) -> None:
    """Issue 29: a typo in a name is answered with the way forward, not only "not found"."""
    name = f"reviewer-{_suffix()}"
    cli.ok("messages", "register", "--agent", name)
    typo = name.replace("reviewer", "reveiwer")
    refused = cli("messages", "send", "--target", f"agent:{typo}", "--message", "hi")
    assert refused.code == 4, refused
    assert f"No agent named '{typo}'; did you mean '{name}'?" in refused.err
    assert "The names: agentworks agents --all" in refused.err
    gone = cli("messages", "unregister", typo)
    assert gone.code == 4 and f"did you mean '{name}'?" in gone.err
    assert cli.ok("messages", "delete", name).out == f"unregistered {name}\n"
