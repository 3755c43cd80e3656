"""The push channel on the local stack (issue 10): a real WebSocket to `agentworks dev`,
the same push function behind it, the messages table's stream polled into the notifier,
and PostToConnection delivered to the live socket through `/@connections/{id}`."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.e2e.api_helpers import api, named_agent
from tests.e2e.conftest import LocalStack

pytestmark = pytest.mark.e2e


def _listen(local_stack: LocalStack, token: str, **query: str) -> Any:
    where = "&".join(f"{k}={v}" for k, v in query.items())
    return connect(
        f"{local_stack.ready['push_url']}/?{where}",
        additional_headers={"Authorization": f"Bearer {token}"},
        open_timeout=10,
    )


def _notice(socket: Any, timeout: float = 5.0) -> dict:
    return json.loads(socket.recv(timeout=timeout))


def test_a_send_wakes_the_listening_name_over_the_websocket(local_stack: LocalStack):
    worker, reviewer = named_agent(local_stack, "worker"), named_agent(local_stack, "reviewer")
    with _listen(local_stack, reviewer, agent_name="reviewer") as socket:
        _, sent, _ = api(
            local_stack,
            "POST",
            "/v1/messages",
            worker,
            {"target": "agent:reviewer", "message": "hi"},
        )
        notice = _notice(socket)  # (how fast: `make bench`, push_wake_latency_s)
        assert notice["type"] == "messages" and notice["conversation_id"] == sent["conversation_id"]
        assert notice["message_id"].endswith("b0000000001")
        # The listener reads through the API, with its own authority.
        _, page, _ = api(
            local_stack, "GET", f"/v1/messages?inbox_id={notice['inbox_id']}", reviewer
        )
        assert [m["body"] for m in page["messages"]] == ["hi"]
        socket.send(json.dumps({"action": "ping"}))
        assert _notice(socket) == {"type": "pong"}


def test_an_upgrade_with_a_bad_token_is_refused_with_the_error_shape(local_stack: LocalStack):
    with pytest.raises(InvalidStatus) as refused:
        _listen(local_stack, "aw1.nope", agent_name="reviewer")
    response = refused.value.response
    assert response.status_code == 401
    assert json.loads(response.body)["error"]["code"] == "unauthenticated"


def test_posting_to_a_closed_connection_is_gone(local_stack: LocalStack):
    """The management API the notifier uses answers as API Gateway does."""
    client = boto3.client(
        "apigatewaymanagementapi",
        endpoint_url=local_stack.url,
        region_name="us-east-1",
        aws_access_key_id="agentworks-local",
        aws_secret_access_key="agentworks-local",
    )
    with pytest.raises(ClientError) as gone:
        client.post_to_connection(ConnectionId="L0SM9cOFvHcCIhw=", Data=b"{}")
    assert gone.value.response["Error"]["Code"] == "GoneException"


def test_cli_listen_prints_the_notice_of_a_send(local_stack: LocalStack, tmp_path):
    """`agentworks listen` as a subprocess, with a config saved by `connections create`
    (which carries the stack's push URL along)."""
    agentworks = Path(sys.executable).with_name("agentworks")
    env = {**local_stack.env, "AGENTWORKS_CONFIG": str(local_stack.admin_config)}
    config = tmp_path / "listener.json"
    create = ["connections", "create", "--name", "cli-listener", "--save-config", str(config)]
    created = subprocess.run(
        [str(agentworks), *create], env=env, capture_output=True, text=True, timeout=60
    )
    assert created.returncode == 0, created.stderr
    assert json.loads(config.read_text())["push_url"] == local_stack.ready["push_url"]
    token = json.loads(config.read_text())["token"]
    assert api(local_stack, "POST", "/v1/agents", token, {"agent_name": "cli-reader"})[0] == 200
    listen = ["--config", str(config), "--json", "listen", "--agent", "cli-reader", "--once"]
    listening = subprocess.Popen(
        [str(agentworks), *listen],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        sender = named_agent(local_stack, "cli-sender")
        while listening.poll() is None and time.monotonic() < deadline:
            # Sent until the listener is connected and hears one (it may not be up yet).
            body = {"target": "agent:cli-reader", "message": "over the push channel"}
            assert api(local_stack, "POST", "/v1/messages", sender, body)[0] == 201
            with contextlib.suppress(subprocess.TimeoutExpired):
                listening.wait(timeout=1.0)
        out, err = listening.communicate(timeout=10)
    finally:
        listening.kill()
    assert listening.returncode == 0, err
    notice = json.loads(out.strip().splitlines()[-1])
    assert notice["type"] == "messages" and notice["inbox_id"].startswith("ibx_")
    assert "listening for agent cli-reader" in err


def test_a_busy_push_port_falls_back_unless_it_was_asked_for(tmp_path):
    """The push port defaults to the API's + 1; taken by something else, the stack still
    starts (on a free port it reports), but an explicit --push-port that is taken is an error."""
    import socket

    from agentworks_local.dev import DevStack, StartError

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        with pytest.raises(StartError, match="--push-port"):
            DevStack(port=0, push_port=busy, config_path=tmp_path / "a.json").start()
        stack = DevStack(port=busy - 1, config_path=tmp_path / "b.json")
        assert stack.requested_push_port == busy and not stack.push_port_chosen
        server = stack._push_server()
        try:
            assert server.port not in (busy, 0)
        finally:
            server.stop()


def test_a_cookie_signed_upgrade_is_taken_only_from_the_pages_origin(local_stack: LocalStack):
    """Issue 24: the Inbox's session cookie is sent to the push port too (cookies ignore
    ports), with an upgrade any page may start; signed in by it, the upgrade is refused
    from another origin like a bad token, and taken from the pages' own (the API's URL)."""
    token = named_agent(local_stack, "cookied")
    _, link, _ = api(local_stack, "POST", "/v1/session/links", token)
    request = urllib.request.Request(
        f"{local_stack.url}/v1/session",
        data=json.dumps({"code": link["code"]}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "x-agentworks-requested-with": "inbox"},
    )
    with urllib.request.urlopen(request, timeout=30) as signed_in:
        cookie = signed_in.headers["Set-Cookie"].split(";", 1)[0]
    url = f"{local_stack.ready['push_url']}/?agent_name=cookied"
    for origin in ("http://evil.example", "http://127.0.0.1:1"):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, origin=origin, additional_headers={"Cookie": cookie}, open_timeout=10)
        assert refused.value.response.status_code == 401
        assert json.loads(refused.value.response.body)["error"]["code"] == "unauthenticated"
    with connect(url, origin=local_stack.url, additional_headers={"Cookie": cookie}) as socket:
        socket.send(json.dumps({"action": "ping"}))
        assert _notice(socket) == {"type": "pong"}
