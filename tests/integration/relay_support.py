"""Helpers for Relay tests: relays as file maps, publishing and running them over HTTP."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.support.relay_gateway import serving

TERMINAL = {"succeeded", "failed", "needs_reconciliation"}


def relay_files(
    name: str,
    source: str,
    functions: list[dict[str, Any]] | None = None,
    module: str = "main",
) -> dict[str, str]:
    """A Relay with one module; `functions` default to `run` taking any object."""
    manifest = {
        "name": name,
        "description": f"The {name} test relay",
        "functions": functions
        or [{"name": "run", "entrypoint": f"{module}:run", "input_schema": {"type": "object"}}],
    }
    return {"relay.yaml": yaml.safe_dump(manifest), f"{module}.py": textwrap.dedent(source)}


def publish(api: Any, admin: str, files: dict[str, str], name: str | None = None) -> dict:
    body: dict[str, Any] = {"files": files}
    if name:
        body["name"] = name
    reply = api("POST", "/api/relays", admin, body)
    assert reply.status == 200, reply.body
    return dict(reply.body)


def start(api: Any, token: str, relay: str, body: dict[str, Any], status: int = 202) -> dict:
    reply = api("POST", f"/api/relays/{relay}/runs", token, body)
    assert reply.status == status, reply.body
    return dict(reply.body)


def wait_run(
    api: Any,
    token: str,
    relay: str,
    run_id: str,
    statuses: set[str] = TERMINAL,
    timeout: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        reply = api("GET", f"/api/relays/{relay}/runs/{run_id}", token)
        assert reply.status == 200, reply.body
        if reply.body["status"] in statuses:
            return dict(reply.body)
        assert time.monotonic() < deadline, reply.body
        time.sleep(0.05)


@pytest.fixture
def relay_api(stack: Any) -> Iterator[str]:
    """The API on a real port, for relay code running in its own process."""
    with serving(stack.services) as url:
        yield url


def live_credential(stack: Any, run_id: str) -> str:
    """A run credential that authenticates: the run, once its own attempt has ended, marked
    running again with a fresh secret, as the host does when it starts an attempt."""
    from dataclasses import replace

    from agentworks.identity import tokens
    from agentworks.relays.credentials import format_credential

    store = stack.services.relays.host._runs
    deadline = time.monotonic() + 60
    while (found := store.get(run_id)) is None or found[0].status not in TERMINAL:
        assert time.monotonic() < deadline, found  # its own attempt ends first
        time.sleep(0.05)
    run, version = found
    secret = tokens.new_secret()
    running = replace(
        run, status="running", attempt=run.attempt + 1, credential_hash=tokens.hash_secret(secret)
    )
    store.replace(running, version)
    return format_credential(run.account_id, run_id, secret)
