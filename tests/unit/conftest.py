"""Fixtures of the CLI's unit tests: a fake AgentWorks server and an admin config for it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworks_cli.client import CONFIG_ENV
from tests.unit.test_cli_commands import TOKEN, FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    # A short poll interval keeps shutdown (and so each test's teardown) quick.
    thread = threading.Thread(target=fake.httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture
def config(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An admin config selected through AGENTWORKS_CONFIG (as `make run` users would)."""
    path = tmp_path / "admin.json"
    path.write_text(json.dumps({"url": server.url, "token": TOKEN, "account_id": "acc1"}))
    monkeypatch.setenv(CONFIG_ENV, str(path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return path
