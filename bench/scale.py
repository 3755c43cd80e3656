"""The local stack as it fills: sends/s and reads/s through the handlers with 0, 10,000 and
100,000 stored messages, and how long a restart with 100,000 takes.

Stored messages are message items in many conversations (ten each), loaded straight into
moto's table: sending 100,000 through the handlers first would take most of an hour. The
measured sends go through the API handler into one conversation (its clock moved on
between sends, so the rate limit never refuses one); the reads page that conversation from
a cursor.

The restart runs the embedded AWS endpoint with the journal on a scratch data folder: the
template's resources are made through it, 100,000 messages are loaded, and the clean stop
writes the snapshot. Then a real `agentworks dev` starts on that folder, and the time to
serving requests is compared with a start on an empty folder; a crash with
`CRASH_WRITES` journaled writes since the snapshot is replayed too.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from agentworks_local.snapshot import Snapshot, load_items
from bench.request_costs import BODY, SEND_SPACING_S
from bench.stack import Stack, open_stack
from bench.throughput import message_item
from tests.support.clock import FakeClock

SIZES = (0, 10_000, 100_000)
ITERATIONS = 200
PER_CONVERSATION = 10
CRASH_WRITES = 2_000
HTTP_INBOXES = 8  # ITERATIONS / HTTP_INBOXES stays under the M11 rate limit
START_TIMEOUT_S = 120.0


def _message_items(count: int, tag: str) -> list[dict[str, Any]]:
    """`count` message items, PER_CONVERSATION to a conversation."""
    return [
        message_item({"S": f"CONV#SEED{tag}{i // PER_CONVERSATION:08d}"}, i % PER_CONVERSATION + 1)
        for i in range(count)
    ]


def _load(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    """Puts items into moto's table directly (as the snapshot loader does)."""
    arn = dynamodb.describe_table(TableName=table)["Table"]["TableArn"]
    _, _, _, region, account_id, _ = arn.split(":", 5)
    load_items(Snapshot(tables={(account_id, region, table): items}))


def _rates(stack: Stack, stored: int) -> dict[str, float]:
    admin = stack.admin_token
    ext = stack.call("POST", "/v1/connections", admin, {"name": "ext"}).body["token"]
    bob = stack.call("POST", "/v1/connections", admin, {"name": "bob-conn"}).body["token"]
    stack.call("POST", "/v1/agents", bob, {"agent_name": "bob"})
    first = stack.call("POST", "/v1/messages", ext, {"message": BODY, "target": "agent:bob"})
    mailbox = stack.call("GET", "/v1/messages", bob, query={"agent_name": "bob"}).body
    bob_inbox = mailbox["messages"][0]["reply_address"]
    _load(stack.oracle, stack.settings.messages_table, _message_items(stored, "S"))
    assert isinstance(stack.clock, FakeClock)
    started = time.perf_counter()
    stack.call("GET", "/v1/messages", bob, query={"agent_name": "bob"})
    results = {f"local_first_read_s_at_{stored}": time.perf_counter() - started}
    started = time.perf_counter()
    for _ in range(ITERATIONS):
        stack.clock.advance(SEND_SPACING_S)
        body = {"message": BODY, "inbox_id": first.body["inbox_id"]}
        stack.call("POST", "/v1/messages", ext, body)
    sends = ITERATIONS / (time.perf_counter() - started)
    query = {"inbox_id": bob_inbox, "agent_name": "bob", "limit": 10, "after": "0"}
    started = time.perf_counter()
    for _ in range(ITERATIONS):
        page = stack.call("GET", "/v1/messages", bob, query=query).body
        assert len(page["messages"]) == 10, page
    reads = ITERATIONS / (time.perf_counter() - started)
    results[f"local_sends_per_s_at_{stored}"] = sends
    results[f"local_reads_per_s_at_{stored}"] = reads
    return results


def measure_rates() -> dict[str, float]:
    """Call inside mock_aws(); one fresh table set per size."""
    results: dict[str, float] = {}
    for stored in SIZES:
        results.update(_rates(open_stack(f"bench-scale-{stored}", FakeClock()), stored))
    low, high = SIZES[0], SIZES[-1]
    for kind in ("sends", "reads"):
        results[f"local_{kind}_ratio_{high}_vs_{low}"] = (
            results[f"local_{kind}_per_s_at_{high}"] / results[f"local_{kind}_per_s_at_{low}"]
        )
    return results


# -- restart ---------------------------------------------------------------------------


def _forget_everything() -> None:
    from moto.moto_api._internal.models import moto_api_backend

    moto_api_backend.reset()


def _fill_data_dir(folder: Path, messages: int) -> dict[str, float]:
    """A data folder as `agentworks dev` leaves it after a clean stop with `messages`."""
    import boto3

    from agentworks_local import moto_patches
    from agentworks_local.aws_server import AwsServer
    from agentworks_local.durable_state import DataDir, DurableState
    from agentworks_local.template import create_resources

    moto_patches.apply()
    _forget_everything()
    data = DataDir(folder)
    data.lock()
    server = AwsServer(DurableState(data))
    server.restore()
    server.start()
    session = boto3.Session(
        aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
    )
    previous = os.environ.get("AWS_ENDPOINT_URL")
    os.environ["AWS_ENDPOINT_URL"] = server.url
    try:
        resources = create_resources(session, prefix="agentworks")  # the stack's own names
        dynamodb = session.client("dynamodb")
        _load(dynamodb, resources.tables["MessagesTable"], _message_items(messages, "R"))
    finally:
        if previous is None:
            os.environ.pop("AWS_ENDPOINT_URL", None)
        else:
            os.environ["AWS_ENDPOINT_URL"] = previous
    started = time.perf_counter()
    server.stop()  # the clean stop: the snapshot of everything
    stop_seconds = time.perf_counter() - started
    data.unlock()
    _forget_everything()
    return {
        "local_snapshot_seconds_at_100000": stop_seconds,
        "local_snapshot_mb_at_100000": data.snapshot.stat().st_size / 1e6,
    }


def _crash_replay_seconds(folder: Path) -> float:
    """Restore, CRASH_WRITES journaled puts, a crash (no snapshot), then the timed restore."""
    import boto3

    from agentworks_local.aws_server import AwsServer
    from agentworks_local.durable_state import DataDir, DurableState

    data = DataDir(folder)
    data.lock()
    server = AwsServer(DurableState(data))
    server.restore()
    server.start()
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )
    for item in _message_items(CRASH_WRITES, "C"):
        dynamodb.put_item(TableName="agentworks-MessagesTable", Item=item)
    server.stop(fold=False)  # a crash: the journal is not folded in
    _forget_everything()
    started = time.perf_counter()
    replayed = AwsServer(DurableState(data)).restore()
    seconds = time.perf_counter() - started
    assert replayed.replayed == CRASH_WRITES, replayed
    data.unlock()
    _forget_everything()
    return seconds


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Client:
    """One keep-alive HTTP connection to a running `agentworks dev`, as an agent holds it."""

    def __init__(self, url: str) -> None:
        split = urlsplit(url)
        self._connection = HTTPConnection(split.hostname or "127.0.0.1", split.port, timeout=60)

    def call(self, method: str, path: str, token: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._connection.request(method, path, body=data, headers=headers)
        response = self._connection.getresponse()
        answer = json.loads(response.read() or b"null")
        if response.status not in (200, 201):
            raise RuntimeError(f"{method} {path} -> {response.status}: {answer}")
        return answer

    def close(self) -> None:
        self._connection.close()


def _served_rates(client: _Client, admin: str, stored: int) -> dict[str, float]:
    """Sends and reads over HTTP: ITERATIONS sends spread over HTTP_INBOXES conversations
    (so the real clock's rate limit never refuses one), then ITERATIONS page reads."""
    ext = client.call("POST", "/v1/connections", admin, {"name": "bench-ext"})["token"]
    inboxes, readers = [], []
    for i in range(HTTP_INBOXES):
        token = client.call("POST", "/v1/connections", admin, {"name": f"bench-{i}"})["token"]
        client.call("POST", "/v1/agents", token, {"agent_name": f"bench-{i}"})
        first = {"message": BODY, "target": f"agent:bench-{i}"}
        inboxes.append(client.call("POST", "/v1/messages", ext, first)["inbox_id"])
        readers.append(token)
    started = time.perf_counter()
    for n in range(ITERATIONS):
        body = {"message": BODY, "inbox_id": inboxes[n % HTTP_INBOXES]}
        client.call("POST", "/v1/messages", ext, body)
    sends = ITERATIONS / (time.perf_counter() - started)
    mailbox = client.call("GET", "/v1/messages?agent_name=bench-0", readers[0])
    inbox = mailbox["messages"][0]["reply_address"]  # bench-0's side of the conversation
    where = {"inbox_id": inbox, "agent_name": "bench-0", "limit": 10, "after": "0"}
    page = "/v1/messages?" + urlencode(where)
    started = time.perf_counter()
    for _ in range(ITERATIONS):
        assert len(client.call("GET", page, readers[0])["messages"]) == 10
    reads = ITERATIONS / (time.perf_counter() - started)
    return {
        f"local_http_sends_per_s_at_{stored}": sends,
        f"local_http_reads_per_s_at_{stored}": reads,
    }


def _first_exchange(client: _Client, admin: str) -> None:
    """What an agent does first: a name, a message to it, and the read of its mailbox (the
    first Query of the messages table, which builds its index from the restored items)."""
    token = client.call("POST", "/v1/connections", admin, {"name": "first"})["token"]
    client.call("POST", "/v1/agents", token, {"agent_name": "first"})
    client.call("POST", "/v1/messages", admin, {"message": "hello", "target": "agent:first"})
    mailbox = client.call("GET", "/v1/messages?agent_name=first", token)
    assert len(mailbox["messages"]) == 1, mailbox


def _served(folder: Path, workdir: Path, stored: int) -> dict[str, float]:
    """A real `agentworks dev` on the data folder `folder`: seconds to serving (ready file
    written) and to the first answered read, then its rates over HTTP."""
    ready = workdir / "ready.json"
    ready.unlink(missing_ok=True)
    options = ["--data-dir", str(folder)]
    config = workdir / "admin.json"
    command = [
        sys.executable, "-m", "agentworks_cli.main", "dev", "--port", str(_free_port()),
        "--config", str(config), *options,
    ]  # fmt: skip
    env = {**os.environ, "AGENTWORKS_DEV_READY_FILE": str(ready)}
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client: _Client | None = None
    try:
        while not ready.exists():
            if process.poll() is not None or time.perf_counter() - started > START_TIMEOUT_S:
                raise RuntimeError(f"`agentworks dev` did not start ({process.returncode})")
            time.sleep(0.05)
        serving = time.perf_counter() - started
        client = _Client(json.loads(ready.read_text())["url"])
        admin = json.loads(config.read_text())["token"]
        _first_exchange(client, admin)
        answered = time.perf_counter() - started
        results = {
            f"local_start_serving_s_at_{stored}": serving,
            f"local_start_first_read_s_at_{stored}": answered,
        }
        results.update(_served_rates(client, admin, stored))
        return results
    finally:
        if client is not None:
            client.close()
        process.send_signal(2)
        process.wait(60)


def measure_restart(messages: int = SIZES[-1]) -> dict[str, float]:
    """Call outside mock_aws(): the endpoint is served over loopback."""
    with tempfile.TemporaryDirectory(prefix="agentworks-bench-") as scratch:
        root = Path(scratch)
        folder = root / "data"
        results = _fill_data_dir(folder, messages)
        results.update(_served(folder, root, messages))
        results.update(_served(root / "empty", root, 0))  # journaled too: the same costs
        results["local_crash_replay_s_2000_writes"] = _crash_replay_seconds(folder)
    low, high = 0, messages
    results[f"local_http_sends_ratio_{high}_vs_{low}"] = (
        results[f"local_http_sends_per_s_at_{high}"] / results[f"local_http_sends_per_s_at_{low}"]
    )
    return results
