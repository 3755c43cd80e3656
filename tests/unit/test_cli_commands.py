"""CLI commands against a tiny in-test HTTP server with canned answers: the requests the
CLI sends, its human and --json output, error lines, exit codes and config files."""

from __future__ import annotations

import io
import json
import socket
import stat
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from agentworks_cli import client, shapes
from agentworks_cli.client import CONFIG_ENV
from agentworks_cli.main import main
from agentworks_local import configfile

TOKEN = "aw1.acc1.con_admin.secret"
WHOAMI = {
    "account_id": "acc1",
    "connection_id": "con_admin",
    "scopes": ["admin", "messages:read"],
    "target_bounds": None,
}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Canned:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None  # answer only once this is set


class FakeServer:
    """Answers (method, path) with canned responses and records every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Canned] = {}
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.seen.append(
                    Seen(
                        self.command,
                        parts.path,
                        parse_qs(parts.query),
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None,
                    )
                )
                canned = fake.routes.get((self.command, parts.path)) or Canned(
                    404, {"error": {"code": "not_found", "message": "No such route."}}
                )
                if canned.hold is not None:
                    canned.hold.wait(10)
                body = canned.body
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(canned.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def on(
        self,
        method: str,
        path: str,
        body: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
        hold: threading.Event | None = None,
    ) -> None:
        self.routes[(method, path)] = Canned(status, body, headers or {}, hold)

    @property
    def last(self) -> Seen:
        return self.seen[-1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- requests and config selection ----


def test_whoami_sends_the_bearer_token_of_the_selected_config(server, config, capsys):
    """A3: the token travels as `Authorization: Bearer`."""
    server.on("GET", "/v1/whoami", WHOAMI)
    code, out, _ = run(capsys, "whoami")
    assert code == 0
    assert server.last.headers["authorization"] == f"Bearer {TOKEN}"
    assert "con_admin" in out and "admin, messages:read" in out


def test_config_flag_wins_over_environment_variable(server, config, tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"url": server.url, "token": "aw1.acc1.con_other.s"}))
    server.on("GET", "/v1/whoami", WHOAMI)
    assert run(capsys, "whoami", "--config", str(other))[0] == 0
    assert server.last.headers["authorization"] == "Bearer aw1.acc1.con_other.s"


def test_default_config_is_used_without_flag_or_environment(server, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".agentworks").mkdir()
    (tmp_path / ".agentworks" / "config.json").write_text(
        json.dumps({"url": server.url + "/", "token": "aw1.acc1.con_home.s"})
    )
    server.on("GET", "/v1/whoami", WHOAMI)
    assert run(capsys, "whoami")[0] == 0
    assert server.last.headers["authorization"] == "Bearer aw1.acc1.con_home.s"
    assert server.last.path == "/v1/whoami"  # the trailing slash of the URL is dropped


def test_login_verifies_the_token_then_writes_a_private_config(server, tmp_path, capsys):
    """A2: the config holds a bearer token, so it is 0600 in a 0700 directory."""
    server.on("GET", "/v1/whoami", WHOAMI)
    path = tmp_path / "fresh" / "config.json"
    code, out, _ = run(
        capsys, "login", "--url", server.url, "--token", TOKEN, "--config", str(path)
    )
    assert code == 0
    assert server.last.headers["authorization"] == f"Bearer {TOKEN}"
    saved = json.loads(path.read_text())
    assert saved["url"] == server.url and saved["token"] == TOKEN
    assert saved["connection_id"] == "con_admin"
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    assert str(path) in out


def test_login_with_a_refused_token_writes_nothing(server, tmp_path, capsys):
    server.on("GET", "/v1/whoami", {"message": "Forbidden"}, status=403)
    path = tmp_path / "config.json"
    code, _, err = run(
        capsys, "login", "--url", server.url, "--token", "bad", "--config", str(path)
    )
    assert code == 1
    assert err == f"error: {client.NOT_AUTHORIZED}\n"
    assert not path.exists()


def test_login_token_from_stdin(server, tmp_path, capsys, monkeypatch):
    server.on("GET", "/v1/whoami", WHOAMI)
    monkeypatch.setattr("sys.stdin", io.StringIO(TOKEN + "\n"))
    path = tmp_path / "c.json"
    assert run(capsys, "login", "--url", server.url, "--token", "-", "--config", str(path))[0] == 0
    assert json.loads(path.read_text())["token"] == TOKEN


def test_connections_create_shows_token_once_and_saves_a_private_config(
    server, config, tmp_path, capsys
):
    """A2: the new connection's token is printed once, with a warning, and saved 0600."""
    created = {
        "connection_id": "con_worker",
        "name": "worker",
        "scopes": ["messages:read", "messages:send"],
        "target_bounds": None,
        "created_at": 1_800_000_000,
        "expires_at": None,
        "revoked_at": None,
        "status": "active",
        "token": "aw1.acc1.con_worker.s3cret",
    }
    server.on("POST", "/v1/connections", created, status=201)
    saved = tmp_path / "worker" / "config.json"
    code, out, _ = run(
        capsys,
        "connections", "create", "--name", "worker",
        "--scopes", "messages:read,messages:send", "--expires-in", "3600",
        "--save-config", str(saved),
    )  # fmt: skip
    assert code == 0
    assert server.last.body == {
        "name": "worker",
        "scopes": ["messages:read", "messages:send"],
        "expires_in_seconds": 3600,
    }
    assert "con_worker" in out and "aw1.acc1.con_worker.s3cret" in out
    assert "shown only once" in out
    data = json.loads(saved.read_text())
    assert data["url"] == server.url and data["token"] == "aw1.acc1.con_worker.s3cret"
    assert data["connection_id"] == "con_worker" and data["account_id"] == "acc1"
    assert mode(saved) == 0o600


def test_connections_create_refuses_to_overwrite_the_config_in_use(server, config, capsys):
    code, _, err = run(capsys, "connections", "create", "--name", "w", "--save-config", str(config))
    assert code == 2
    assert err.startswith("error: --save-config") and err.count("\n") == 1
    assert server.seen == []  # refused before a connection was created


def test_connections_list_and_revoke(server, config, capsys):
    row = {
        "connection_id": "con_w",
        "name": "worker",
        "scopes": ["messages:read"],
        "target_bounds": None,
        "created_at": 1_800_000_000,
        "expires_at": None,
        "revoked_at": None,
        "status": "active",
    }
    server.on("GET", "/v1/connections", {"connections": [row]})
    code, out, _ = run(capsys, "connections", "list")
    assert code == 0
    assert out.splitlines()[0].split() == [
        "CONNECTION_ID", "NAME", "STATUS", "SCOPES", "CREATED", "EXPIRES",
    ]  # fmt: skip
    assert "con_w" in out and "2027-01-15 08:00:00 UTC" in out
    server.on("DELETE", "/v1/connections/con_w", {**row, "status": "revoked"})
    code, out, _ = run(capsys, "connections", "revoke", "con_w")
    assert code == 0 and "revoked connection con_w" in out


# ---- messages ----

PAGE = {
    "kind": "mailbox",
    "messages": [
        {
            "message_id": "msg_1",
            "conversation_id": "cnv_1",
            "inbox_id": "inb_r",
            "reply_address": "inb_reply",
            "sender": "agent:worker",
            "body": "Ready for review\nsecond line \x1b[31mred",
            "created_at": "2027-01-15T08:00:00.000+00:00",
            "receipt": "stored",
            "delivered_text": "…",
            "kind": "message",
            "deadline_at": None,
            "handoff": False,
            "in_reply_to": None,
            "written_by": None,
        }
    ],
    "next_cursor": "CUR_2",
    "inbox_id": None,
    "agent_name": "reviewer",
}


def test_read_mailbox_sends_the_query_and_prints_messages_with_next_steps(server, config, capsys):
    """M3/M6: each message shows sender, id, time, reply_address and body; then the cursor
    and copy-paste commands to continue and reply."""
    server.on("GET", "/v1/messages", PAGE)
    code, out, err = run(
        capsys, "messages", "read", "--agent", "reviewer", "--after", "0", "--wait", "25"
    )
    assert code == 0 and err == ""
    assert server.last.query == {"agent_name": ["reviewer"], "after": ["0"], "wait_seconds": ["25"]}
    for expected in (
        "from:          agent:worker",
        "message_id:    msg_1",
        "time:          2027-01-15 08:00:00 UTC",
        "reply_address: inb_reply",
        "  | Ready for review",
        "  | second line \\x1b[31mred",  # another agent's control characters stay inert
        "next cursor: CUR_2",
        "continue: agentworks messages read --agent reviewer --after CUR_2 --wait 25",
        "reply: agentworks messages send --agent reviewer --inbox inb_reply --message 'your reply'",
        "ack:   agentworks messages ack msg_1 --delivery admitted",
    ):
        assert expected in out.splitlines(), expected
    assert "\x1b" not in out


def test_copy_paste_commands_keep_an_explicit_config(server, tmp_path, capsys):
    path = tmp_path / "my config.json"
    path.write_text(json.dumps({"url": server.url, "token": TOKEN}))
    server.on("GET", "/v1/messages", {**PAGE, "messages": [], "kind": "inbox"})
    code, out, _ = run(capsys, "--config", str(path), "messages", "read", "--inbox", "inb_x")
    assert code == 0
    assert "no new messages" in out
    assert (
        f"continue: agentworks --config '{path}' messages read --inbox inb_x --after CUR_2" in out
    )


def test_read_json_prints_the_server_page(server, config, capsys):
    server.on("GET", "/v1/messages", PAGE)
    code, out, _ = run(capsys, "messages", "read", "--inbox", "inb_r", "--agent", "r", "--json")
    assert code == 0 and json.loads(out) == PAGE


@pytest.mark.parametrize(("tty", "shown"), [(True, True), (False, False)])
def test_long_wait_progress_line_only_on_a_terminal(
    server, config, capsys, monkeypatch, tty, shown
):
    server.on("GET", "/v1/messages", {**PAGE, "messages": []})
    monkeypatch.setattr("sys.stderr.isatty", lambda: tty)
    code, _, err = run(capsys, "messages", "read", "--agent", "reviewer", "--wait", "25")
    assert code == 0
    assert (err == "waiting up to 25 s for new messages…\n") is shown
    assert shown or err == ""


def test_http_timeout_is_the_wait_plus_ten_seconds(server, config, capsys, monkeypatch):
    timeouts: list[float] = []
    real_opener = client._opener

    def spying_opener(url: str) -> Any:
        opener = real_opener(url)
        real_open = opener.open

        def open_(request: Any, timeout: float) -> Any:
            timeouts.append(timeout)
            return real_open(request, timeout=timeout)

        opener.open = open_
        return opener

    monkeypatch.setattr(client, "_opener", spying_opener)
    server.on("GET", "/v1/messages", PAGE)
    server.on("GET", "/v1/agents", {"agents": []})
    run(capsys, "messages", "read", "--agent", "reviewer", "--wait", "25")
    run(capsys, "messages", "list")
    assert timeouts == [35.0, 10.0]


def test_a_server_that_does_not_answer_in_time_is_unreachable(server, config, capsys, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(client, "BASE_TIMEOUT_SECONDS", 0.2)
    server.on("GET", "/v1/agents", {"agents": []}, hold=release)
    try:
        code, _, err = run(capsys, "messages", "list")
    finally:
        release.set()
    assert code == 3
    assert err.startswith(f"error: no answer from the AgentWorks server at {server.url}")
    assert err.count("\n") == 1


def test_send_from_stdin_with_submission_id(server, config, capsys, monkeypatch):
    """M1/M2: the body, target, sender name and retry key go to POST /v1/messages."""
    receipt = {
        "inbox_id": "inb_w",
        "conversation_id": "cnv_1",
        "message_id": "msg_1",
        "receipt": "stored",
        "created_at": "2027-01-15T08:00:00.000+00:00",
        "replayed": True,
    }
    server.on("POST", "/v1/messages", receipt, status=200)
    monkeypatch.setattr("sys.stdin", io.StringIO("Ready for review\n"))
    code, out, _ = run(
        capsys,
        "messages", "send", "--agent", "worker", "--target", "agent:reviewer",
        "--message", "-", "--submission-id", "s-1",
    )  # fmt: skip
    assert code == 0
    assert server.last.body == {
        "message": "Ready for review",
        "target": "agent:reviewer",
        "agent_name": "worker",
        "submission_id": "s-1",
    }
    assert "sent message msg_1 (receipt: stored)" in out
    assert "replayed" in out and "inbox:        inb_w" in out
    assert "agentworks messages read --agent worker --inbox inb_w --after 0 --wait 25" in out


def test_register_list_ack_state_unregister(server, config, capsys):
    agent = {
        "agent_name": "reviewer",
        "agent_id": "agt_1",
        "purpose": "Reviews changes",
        "provider": "claude",
        "online": True,
        "allowed_connection_ids": ["con_admin", "con_w"],
        "created_at": "2027-01-15T08:00:00.000+00:00",
        "last_seen_at": None,
    }
    server.on("POST", "/v1/agents", agent)
    code, out, _ = run(
        capsys, "messages", "register", "--agent", "reviewer", "--allow-connection", "con_w",
        "--purpose", "Reviews changes", "--provider", "claude",
    )  # fmt: skip
    assert code == 0 and "registered reviewer (agt_1)" in out
    assert server.last.body == {
        "agent_name": "reviewer",
        "allowed_connection_ids": ["con_w"],
        "purpose": "Reviews changes",
        "provider": "claude",
    }

    offline = {**agent, "agent_name": "worker", "online": False, "purpose": None}
    server.on("GET", "/v1/agents", {"agents": [agent, offline]})
    code, out, _ = run(capsys, "messages", "list")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "PROVIDER", "PURPOSE"]
    assert lines[1].split()[:2] == ["reviewer", "online"] and lines[1].endswith("Reviews changes")
    assert lines[2].split()[:2] == ["worker", "offline"]
    # agents --all: the directory, with whether a listener of each name is connected.
    listened = {"agents": [{**agent, "listening": True}, {**offline, "listening": False}]}
    server.on("GET", "/v1/agents", listened)
    code, out, _ = run(capsys, "agents", "--all")
    assert code == 0 and server.last.query == {"listening": ["true"]}
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "LISTENER", "PROVIDER", "PURPOSE"]
    assert lines[1].split()[:3] == ["reviewer", "online", "connected"]
    assert lines[2].split()[:3] == ["worker", "offline", "-"]

    server.on("POST", "/v1/messages/msg_1/ack", {"message_id": "msg_1", "receipt": "admitted"})
    code, out, _ = run(capsys, "messages", "ack", "--message-id", "msg_1", "--delivery", "admitted")
    assert code == 0 and server.last.body == {"delivery": "admitted"}
    assert out == "message msg_1 receipt: admitted\n"

    state = {
        "inbox_id": "inb_w",
        "conversation_id": "cnv_1",
        "peer": "agent:reviewer",
        "status": "active",
        "messages_retained": 1,
        "history_limit": 1000,
        "rate_used": 2,
        "rate_remaining": 38,
        "retry_after": 0,
        "created_at": "2027-01-15T08:00:00.000+00:00",
        "last_activity_at": "2027-01-15T08:01:00.000+00:00",
        "idle_expires_at": "2027-01-22T08:01:00.000+00:00",
        "delivery_records": [
            {"message_id": "msg_1", "created_at": "2027-01-15T08:00:00.000+00:00",
             "receipt": "processed"},
        ],
    }  # fmt: skip
    server.on("GET", "/v1/inboxes/inb_w/state", state)
    code, out, _ = run(capsys, "messages", "state", "--inbox", "inb_w", "--agent", "worker")
    assert code == 0 and server.last.query == {"agent_name": ["worker"]}
    assert "peer:          agent:reviewer" in out
    assert any(line.split()[0::4] == ["msg_1", "processed"] for line in out.splitlines()[1:])

    server.on("DELETE", "/v1/agents/reviewer", {"agent_name": "reviewer", "unregistered": True})
    code, out, _ = run(capsys, "messages", "unregister", "--agent", "reviewer")
    assert code == 0 and out == "unregistered reviewer\n"


# ---- errors: one line on stderr, exit codes that mean something ----


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "line"),
    [
        (
            400,
            {"error": {"code": "invalid_request", "message": "message: too long"}},
            {},
            1,
            "error: message: too long",
        ),
        (
            404,
            {"error": {"code": "unavailable", "message": "Not found or not available."}},
            {},
            4,
            "error: Not found or not available.",
        ),
        (
            410,
            {"error": {"code": "expired", "message": "This inbox expired."}},
            {},
            4,
            "error: This inbox expired.",
        ),
        (
            429,
            {"error": {"code": "rate_limited", "message": "Too many.", "retry_after": 17}},
            {"Retry-After": "17"},
            5,
            "error: Too many. (retry after 17 s)",
        ),
        (
            403,
            {"error": {"code": "forbidden", "message": "This connection lacks 'admin'."}},
            {},
            1,
            "error: This connection lacks 'admin'.",
        ),
        (403, {"message": "Forbidden"}, {}, 1, f"error: {client.NOT_AUTHORIZED}"),
        (502, b"<html>Bad gateway</html>", {}, 1, "error: the server answered HTTP 502"),
        (
            500,
            {"error": {"code": "internal", "message": "Internal error;\nretry later."}},
            {},
            1,
            "error: Internal error; retry later.",
        ),
    ],
)
def test_error_line_and_exit_code(server, config, capsys, status, body, headers, code, line):
    server.on("POST", "/v1/messages", body, status=status, headers=headers)
    result, out, err = run(capsys, "messages", "send", "--inbox", "ibx_1a", "--message", "hi")
    assert result == code
    assert err == line + "\n"
    assert out == ""


def test_a_local_stack_that_forgot_the_token_says_it_restarted_and_where_the_new_one_is(
    server, tmp_path, capsys, monkeypatch
):
    """A6: a local stack started with fresh state (e.g. --ephemeral) forgets tokens: an old
    config's token is unknown (401), and the error says so, where `agentworks dev` wrote the
    new admin token and how to make this connection again."""
    worker = tmp_path / "worker.json"
    worker.write_text(json.dumps({"url": server.url, "token": "aw1.acct_old.conn_1.secret"}))
    # `agentworks dev` wrote its admin config at the default path; AGENTWORKS_CONFIG names
    # the worker's own, as the banner's commands do: the check must not follow it.
    monkeypatch.setattr(configfile, "DEFAULT_CONFIG_PATH", tmp_path / "admin.json")
    monkeypatch.setenv(CONFIG_ENV, str(worker))
    # What `agentworks dev` wrote when it started again: a new account.
    restarted = {"url": server.url, "token": "aw1.acct_new.conn_2.s", "account_id": "acct_new"}
    (tmp_path / "admin.json").write_text(json.dumps(restarted))
    refused = {"error": {"code": "unauthenticated", "message": "Unknown or revoked token."}}
    server.on("POST", "/v1/messages", refused, status=401)
    code, out, err = run(
        capsys, "--config", str(worker), "messages", "send", "--inbox", "ibx_1a", "--message", "hi"
    )
    assert code == 1 and out == ""
    line = err.strip()
    assert line.startswith(f"error: the local stack at {server.url} does not know this token")
    assert "the local stack was restarted" in line
    assert f"wrote a new admin token to {tmp_path / 'admin.json'}" in line
    assert f"connections create --name NAME --save-config {worker}" in line
    code, out, _ = run(
        capsys, "--config", str(worker), "messages", "send", "--inbox", "ibx_1a",
        "--message", "hi", "--json",
    )  # fmt: skip
    assert code == 1 and json.loads(out)["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("aw1.acct_old.conn_1", "it has 3 dot-separated parts, not 4"),  # a cut-off paste
        ("Bearer aw1.acct_old.conn_1.secret", "it does not start with aw1."),
        ("aw1.acct_old..secret", "one of its parts is empty"),
    ],
)
def test_a_malformed_token_is_called_malformed_not_a_restart(
    server, tmp_path, capsys, monkeypatch, token, problem
):
    """Issue 29: a token no server could have issued is diagnosed as such, even where the
    local stack's admin config names another account (the restart check's sign)."""
    worker = tmp_path / "worker.json"
    worker.write_text(json.dumps({"url": server.url, "token": token}))
    monkeypatch.setattr(configfile, "DEFAULT_CONFIG_PATH", tmp_path / "admin.json")
    restarted = {"url": server.url, "token": "aw1.acct_new.conn_2.s", "account_id": "acct_new"}
    (tmp_path / "admin.json").write_text(json.dumps(restarted))
    refused = {"error": {"code": "unauthenticated", "message": "Unknown or revoked token."}}
    server.on("POST", "/v1/messages", refused, status=401)
    code, out, err = run(
        capsys, "--config", str(worker), "messages", "send", "--inbox", "ibx_1a", "--message", "hi"
    )
    assert code == 1 and out == ""
    assert err.startswith(f"error: This token is malformed: {problem}; a connection token ")
    assert "restarted" not in err and token not in err  # never echo a secret
    assert f"agentworks login --url {server.url} --token -" in err


def test_a_local_stack_refusing_a_token_of_its_own_account_says_not_authorized(
    server, tmp_path, capsys, monkeypatch
):
    """A3: a revoked or expired token of the running local stack is not a restart."""
    worker = tmp_path / "worker.json"
    worker.write_text(json.dumps({"url": server.url, "token": "aw1.acct_1.conn_1.secret"}))
    # `agentworks dev` wrote its admin config at the default path; AGENTWORKS_CONFIG names
    # the worker's own, as the banner's commands do: the check must not follow it.
    monkeypatch.setattr(configfile, "DEFAULT_CONFIG_PATH", tmp_path / "admin.json")
    monkeypatch.setenv(CONFIG_ENV, str(worker))
    current = {"url": server.url, "token": "aw1.acct_1.conn_0.s", "account_id": "acct_1"}
    (tmp_path / "admin.json").write_text(json.dumps(current))
    refused = {"error": {"code": "unauthenticated", "message": "Unknown or revoked token."}}
    server.on("GET", "/v1/whoami", refused, status=401)
    code, _, err = run(capsys, "--config", str(worker), "whoami")
    assert code == 1 and "restarted" not in err


def test_a_remote_server_refusing_the_token_says_not_authorized():
    error = client.http_error(401, b'{"message": "Unauthorized"}')
    assert error.message == client.NOT_AUTHORIZED


def test_rate_limit_without_retry_after_in_the_message_gets_it_from_the_header(
    server, config, capsys
):
    server.on(
        "POST",
        "/v1/messages",
        {"error": {"code": "rate_limited", "message": "Slow down."}},
        status=429,
        headers={"Retry-After": "42"},
    )
    code, _, err = run(capsys, "messages", "send", "--inbox", "inb_1", "--message", "hi")
    assert code == 5 and err == "error: Slow down. (retry after 42 s)\n"


def test_an_unknown_agent_or_crew_name_names_the_nearest_and_the_list(server, config, capsys):
    body = {"error": {"code": "unavailable", "message": "Not found or not available."}}
    server.on("POST", "/v1/messages", body, status=404)
    agent = {"agent_id": "agt_1", "online": False, "allowed_connection_ids": []}
    agent["created_at"] = "2030-01-01T00:00:00Z"
    directory = {"agents": [{**agent, "agent_name": "reviewer"}]}
    server.on("GET", "/v1/agents", directory)
    code, _, err = run(capsys, "messages", "send", "--target", "agent:reveiwer", "--message", "hi")
    assert code == 4
    assert err == (
        "error: Not found or not available. No agent named 'reveiwer'; did you mean "
        "'reviewer'? The names: agentworks agents --all\n"
    )
    code, _, err = run(capsys, "messages", "send", "--target", "agent:reviewer", "--message", "hi")
    assert "The agent 'reviewer' exists, but not for this connection" in err
    server.on("GET", "/v1/functions", body, status=404)
    server.on("GET", "/v1/crews", {"crews": []})  # none: the way to list them, no guess
    code, _, err = run(capsys, "functions", "list", "--target", "crew:contrcts")
    assert code == 4
    assert err.endswith("No Crew named 'contrcts'. The names: agentworks crews list\n")


def test_conversations_show_without_read_access_still_shows_the_requests(server, config, capsys):
    """The answers come from reading the inbox; a connection that may send but not read
    still sees where its requests stand, and why the answers are missing."""
    request = {"message_id": "msg_1", "state": "answered", "label": "Answered"}
    request |= {"created_at": "2030-01-01T00:00:00Z", "updated_at": "2030-01-01T00:00:00Z"}
    server.on("GET", "/v1/requests", {"inbox_id": "ibx_1a", "requests": [request]})
    refused = {"error": {"code": "forbidden", "message": "This connection may not read."}}
    server.on("GET", "/v1/messages", refused, status=403)
    code, out, err = run(capsys, "conversations", "show", "ibx_1a")
    assert code == 0, err
    assert "msg_1" in out and "Answered" in out
    assert out.endswith("answers not shown: This connection may not read.\n")


def test_json_errors_print_the_error_json_too(server, config, capsys):
    body = {"error": {"code": "unavailable", "message": "Not found or not available."}}
    server.on("POST", "/v1/messages", body, status=404)
    code, out, err = run(
        capsys, "--json", "messages", "send", "--inbox", "ibx_1a", "--message", "hi"
    )
    assert code == 4
    assert json.loads(out) == body
    assert err == "error: Not found or not available.\n"


def test_unreachable_server_names_the_url_and_how_to_start_it(tmp_path, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"url": url, "token": TOKEN}))
    code, out, err = run(capsys, "--config", str(path), "--json", "messages", "list")
    assert code == 3
    assert err.count("\n") == 1
    assert err.startswith(f"error: cannot reach the AgentWorks server at {url}")
    assert "make run" in err and "agentworks dev" in err
    assert json.loads(out)["error"]["code"] == "unreachable"


def test_unexpected_failures_are_one_line_not_a_traceback(server, config, capsys, monkeypatch):
    def broken(self, body):
        raise RuntimeError("boom")

    monkeypatch.setattr(shapes.Shape, "parse", broken)
    server.on("GET", "/v1/whoami", WHOAMI)
    code, _, err = run(capsys, "whoami")
    assert code == 1
    assert err == "error: unexpected RuntimeError: boom\n"


def test_an_answer_without_the_models_fields_is_refused_in_one_line(server, config, capsys):
    """The CLI reads answers with the server's response models: a renamed or missing
    field is a clear error, not a KeyError or a wrong summary."""
    server.on("GET", "/v1/whoami", ["not", "an", "object"])
    code, _, err = run(capsys, "whoami")
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: the server's answer does not have the shape this CLI reads")
    renamed = {k if k != "connection_id" else "connection": v for k, v in WHOAMI.items()}
    server.on("GET", "/v1/whoami", renamed)
    code, _, err = run(capsys, "whoami")
    assert code == 1 and "WhoAmI: connection_id: Field required" in err


def test_non_json_success_is_refused_in_one_line(server, config, capsys):
    server.on("GET", "/v1/whoami", b"<html>hello</html>")
    code, _, err = run(capsys, "whoami")
    assert code == 1
    assert "not JSON" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--ephemeral", "--data-dir", "somewhere"), "--ephemeral keeps no state"),
        (("--ephemeral", "--reset"), "--reset empties a data folder; --ephemeral has none"),
        (("--ephemeral", "--fsync-every", "1"), "--ephemeral keeps no journal"),
        (("--fsync-every", "-1"), "--fsync-every must be 0 to 60 seconds"),
        (("--fsync-every", "61"), "--fsync-every must be 0 to 60 seconds"),
    ],
)
def test_dev_refuses_options_that_contradict_each_other(capsys, argv, says) -> None:
    code, _, err = run(capsys, "dev", "--port", "8799", *argv)
    assert code == 2 and says in err
