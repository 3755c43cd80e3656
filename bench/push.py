"""Push delivery (issue 10): what a listener costs and how fast it wakes.

- In-process, metered: the push function's `$connect`, keep-alive ping and `$disconnect`,
  and the notifier's work for one message to one listening name (DynamoDB requests and
  capacity units, handler time), through the real handlers.
- Over the local stack: a real `agentworks dev`, a WebSocket listening for a name, and the
  time from the start of a send request to the notice arriving on the socket.
- The month of one always-attached idle agent on AWS, from list prices and those counts:
  connection-minutes, a reconnect every 2 hours (API Gateway's maximum connection time)
  and a ping every 9 minutes (its idle timeout is 10), against long-polling all month.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bench import prices
from bench.meter import Tally
from bench.request_costs import BODY
from bench.stack import Stack, quiet
from tests.support.handlers import LambdaContext, load_handler
from tests.support.streams import StreamReader

ROUNDS = 11
PING_EVERY_MINUTES = 9
RECONNECT_EVERY_MINUTES = 120
LONG_POLL_SECONDS = 25
START_TIMEOUT_S = 60.0


def _ws_event(route: str, ws_id: str, token: str = "", **query: str) -> dict[str, Any]:
    return {
        "headers": {"authorization": f"Bearer {token}"} if token else {},
        "queryStringParameters": query or None,
        "requestContext": {"routeKey": route, "connectionId": ws_id, "requestId": ws_id},
        "body": json.dumps({"action": "ping"}) if route == "$default" else None,
    }


def _timed(stack: Stack, function: str, event: dict[str, Any]) -> tuple[Any, Tally, float]:
    tally = Tally()
    handler = load_handler(function).handler
    with stack.meter.recording(tally), quiet():
        started = time.perf_counter()
        answer = handler(event, LambdaContext())
        seconds = time.perf_counter() - started
    return answer, tally, seconds


def measure_costs(stack: Stack) -> dict[str, float]:
    """Requests and units of each push path (a FakeClock stack, activated)."""
    admin = stack.admin_token
    token = stack.call("POST", "/v1/connections", admin, {"name": "listener"}).body["token"]
    stack.call("POST", "/v1/agents", token, {"agent_name": "listener"})
    sender = stack.call("POST", "/v1/connections", admin, {"name": "sender"}).body["token"]
    figures: dict[str, float] = {}
    seconds: dict[str, list[float]] = {"connect": [], "ping": [], "disconnect": []}
    for _ in range(ROUNDS):
        ws_id = uuid.uuid4().hex
        answer, connect, took = _timed(
            stack, "push", _ws_event("$connect", ws_id, token, agent_name="listener")
        )
        assert answer["statusCode"] == 200, answer
        seconds["connect"].append(took)
        _, ping, took = _timed(stack, "push", _ws_event("$default", ws_id))
        seconds["ping"].append(took)
        _, disconnect, took = _timed(stack, "push", _ws_event("$disconnect", ws_id))
        seconds["disconnect"].append(took)
    for name, tally in (("connect", connect), ("ping", ping), ("disconnect", disconnect)):
        figures[f"push_{name}_ddb_requests"] = tally.total_requests
        figures[f"push_{name}_read_units"] = tally.read_units
        figures[f"push_{name}_write_units"] = tally.billed_write_units
        figures[f"push_{name}_ms"] = statistics.median(seconds[name]) * 1000
    # Messages to a listening name, one notifier invocation each (a quiet stream's case).
    ws_id = uuid.uuid4().hex
    _timed(stack, "push", _ws_event("$connect", ws_id, token, agent_name="listener"))
    stream = StreamReader(stack.oracle, stack.settings.messages_table)
    notify, took_ms, inbox = Tally(), [], None
    for _ in range(ROUNDS):
        body = {"message": BODY} | ({"inbox_id": inbox} if inbox else {"target": "agent:listener"})
        inbox = stack.call("POST", "/v1/messages", sender, body).body["inbox_id"]
        answer, notify, took = _timed(stack, "notifier", {"Records": stream.records()})
        assert answer["posted"] == 1, answer
        took_ms.append(took * 1000)
    figures["push_notify_ddb_requests"] = notify.total_requests
    figures["push_notify_read_units"] = notify.read_units
    figures["push_notify_ms"] = statistics.median(took_ms)
    return figures


def _lambda_dollars(seconds: float, memory_mb: int) -> float:
    billed = max(0.001, round(seconds + 0.0005, 3))
    return (
        prices.LAMBDA_PER_MILLION_REQUESTS / 1e6
        + billed * memory_mb / 1024 * prices.LAMBDA_ARM_PER_GB_SECOND
    )


def _ddb_dollars(figures: dict[str, float], name: str) -> float:
    reads = figures[f"push_{name}_read_units"] * prices.DYNAMODB_PER_MILLION_READ_UNITS / 1e6
    writes = (
        figures.get(f"push_{name}_write_units", 0.0) * prices.DYNAMODB_PER_MILLION_WRITE_UNITS / 1e6
    )
    return reads + writes


def per_message(figures: dict[str, float]) -> dict[str, float]:
    """What the notifier adds to a million messages when each is its own invocation (a
    stream under one message a second; busier streams share invocations)."""
    invocation = _lambda_dollars(
        figures["push_notify_ms"] / 1000, prices.memory_mb("NotifierFunction")
    )
    return {
        "push_cost_per_million_messages_usd": 1e6 * (invocation + _ddb_dollars(figures, "notify"))
    }


def idle_month(figures: dict[str, float]) -> dict[str, float]:
    """Dollars a month for one attached agent that receives nothing, and for long-polling."""
    memory = prices.memory_mb("PushFunction")
    minutes = prices.MINUTES_PER_MONTH
    pings = minutes / PING_EVERY_MINUTES
    reconnects = minutes / RECONNECT_EVERY_MINUTES
    ping = (
        2 * prices.WEBSOCKET_PER_MILLION_MESSAGES / 1e6  # the ping and its answer
        + _lambda_dollars(figures["push_ping_ms"] / 1000, memory)
        + _ddb_dollars(figures, "ping")
    )
    reconnect = sum(
        _lambda_dollars(figures[f"push_{name}_ms"] / 1000, memory) + _ddb_dollars(figures, name)
        for name in ("connect", "disconnect")
    )
    connected = minutes * prices.WEBSOCKET_PER_MILLION_CONNECTION_MINUTES / 1e6
    push_month = connected + pings * ping + reconnects * reconnect
    polls = minutes * 60 / LONG_POLL_SECONDS
    api_memory = prices.memory_mb("ApiFunction")
    poll = (
        prices.HTTP_API_PER_MILLION_REQUESTS / 1e6
        + _lambda_dollars(LONG_POLL_SECONDS, api_memory)
        + (LONG_POLL_SECONDS + 1) * prices.DYNAMODB_PER_MILLION_READ_UNITS / 1e6
    )
    return {
        "push_idle_agent_usd_per_month": push_month,
        "push_idle_agent_requests_per_month": pings + 2 * reconnects,
        "long_poll_idle_agent_usd_per_month": polls * poll,
    }


# -- wake latency over the local stack's WebSocket ------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _call(url: str, method: str, path: str, token: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def measure_wake(rounds: int = ROUNDS) -> dict[str, float]:
    """Median and worst seconds from a send's start to its notice on the socket."""
    from websockets.sync.client import connect

    with tempfile.TemporaryDirectory(prefix="agentworks-push-") as scratch:
        work = Path(scratch)
        ready, config = work / "ready.json", work / "admin.json"
        command = [
            sys.executable, "-m", "agentworks_cli.main", "dev", "--ephemeral",
            "--port", str(_free_port()), "--push-port", str(_free_port()), "--config", str(config),
        ]  # fmt: skip
        env = {**os.environ, "AGENTWORKS_DEV_READY_FILE": str(ready)}
        process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            started = time.perf_counter()
            while not ready.exists():
                if process.poll() is not None or time.perf_counter() - started > START_TIMEOUT_S:
                    raise RuntimeError(f"`agentworks dev` did not start ({process.returncode})")
                time.sleep(0.05)
            note = json.loads(ready.read_text())
            url, admin = note["url"], json.loads(config.read_text())["token"]
            token = _call(url, "POST", "/v1/connections", admin, {"name": "listener"})["token"]
            _call(url, "POST", "/v1/agents", token, {"agent_name": "listener"})
            sender = _call(url, "POST", "/v1/connections", admin, {"name": "sender"})["token"]
            latencies = []
            headers = {"Authorization": f"Bearer {token}"}
            with connect(
                f"{note['push_url']}/?agent_name=listener", additional_headers=headers
            ) as socket:
                inbox = None
                for _ in range(rounds):
                    body = {"message": BODY} | (
                        {"inbox_id": inbox} if inbox else {"target": "agent:listener"}
                    )
                    sent_at = time.perf_counter()
                    inbox = _call(url, "POST", "/v1/messages", sender, body)["inbox_id"]
                    json.loads(socket.recv(timeout=10))
                    latencies.append(time.perf_counter() - sent_at)
                    time.sleep(0.2)
        finally:
            process.send_signal(2)
            process.wait(60)
    return {
        "push_wake_latency_s": statistics.median(latencies),
        "push_wake_latency_max_s": max(latencies),
    }
