"""The real Claude Code and Codex (tools/clis, pinned; `make test` installs them with npm)
against the scripted model server (tests/support/scripted_model.py): nothing leaves 127.0.0.1.

Each run gets a temporary HOME (and CODEX_HOME), so no user config is read or written. Claude
Code is pointed at the server by ANTHROPIC_BASE_URL with a dummy ANTHROPIC_API_KEY, and kept
quiet by DISABLE_TELEMETRY, DISABLE_ERROR_REPORTING, DISABLE_AUTOUPDATER and
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC. Codex gets a config.toml whose model provider
`scripted` (wire_api "responses", no websockets) has the server as base_url, with
analytics off, no update check, and the plugin and app features off (with them on, Codex
0.171.0 looks up github.com, api.github.com and chatgpt.com at every start).

Without tools/clis/node_modules the tests skip with the reason, except under CI=true, where
they fail: the real CLIs are the judge of the bridge and must run there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    LocalStack,
    http,
    local_stack,  # noqa: F401 (the fixture, for the bridge tests)
)
from tests.e2e.test_bridge_process import BridgeRun
from tests.support.scripted_model import ScriptedModel

REPO = Path(__file__).resolve().parents[2]
CLIS_BIN = REPO / "tools" / "clis" / "node_modules" / ".bin"
CLAUDE = CLIS_BIN / "claude"
CODEX = CLIS_BIN / "codex"
VENV_BIN = Path(sys.executable).parent  # where the `agentworks` the hooks run lives
RUN_TIMEOUT = 60

CLAUDE_VERSION = "2.1.197"
CODEX_VERSION = "0.171.0"


MISSING = "the real CLIs are not installed in tools/clis: run `make test` (needs npm)"


def _ours(item: pytest.Item) -> bool:
    return item.path.is_relative_to(Path(__file__).parent)


def _installed() -> bool:
    return CLAUDE.exists() and CODEX.exists()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in filter(_ours, items):
        item.add_marker(pytest.mark.clis)
        item.add_marker(pytest.mark.e2e)
        if _installed():
            continue
        if os.environ.get("CI") == "true":
            # A missing CLI must fail here, not pass as an expected failure.
            item.own_markers[:] = [m for m in item.own_markers if m.name != "xfail"]
        else:
            item.add_marker(pytest.mark.skip(reason=MISSING))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _ours(item) and not _installed() and os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {MISSING}", pytrace=False)


@pytest.fixture
def bridge(local_stack: LocalStack, tmp_path: Path) -> Iterator[Bridge]:  # noqa: F811
    """The bridge, started with the stack's admin login and its own folder."""
    home = tmp_path / "bridge"
    env = {**os.environ, "AGENTWORKS_BRIDGE_HOME": str(home)}
    run = Bridge(home, local_stack.admin_config, env)
    run.start()
    try:
        yield run
    finally:
        run.stop()


def send(local_stack: LocalStack, sender: str, to: str, text: str) -> str:  # noqa: F811
    """`sender` (a token) sends `text` to the agent name `to` through the API; the sender's
    inbox of the conversation."""
    status, sent, _ = http("POST", f"{local_stack.url}/v1/messages", token=sender,
                           body={"target": f"agent:{to}", "message": text})  # fmt: skip
    assert status == 201, sent
    return str(sent["inbox_id"])


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server
    assert not server.errors, f"the scripted model could not play its script: {server.errors}"


def path_without_agentworks() -> str:
    """The PATH of the run without the virtualenv's bin: the hooks must find `agentworks`
    by the full path `agentworks attach` wrote, as on a machine where it is not on PATH."""
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d) != VENV_BIN]
    return os.pathsep.join(kept)


def base_env(home: Path, extra_path: tuple[Path, ...] = ()) -> dict[str, str]:
    """A small environment of our own: nothing of the user's CLI config or keys leaks in."""
    path = os.pathsep.join([*(str(p) for p in extra_path), path_without_agentworks()])
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "NO_PROXY": "127.0.0.1,localhost"}
    env["no_proxy"] = env["NO_PROXY"]
    return env


def claude_env(model: ScriptedModel, home: Path, **extra: str) -> dict[str, str]:
    return {
        **base_env(home),
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **extra,
    }


def codex_env(
    model: ScriptedModel, home: Path, trusted: tuple[Path, ...] = (), **extra: str
) -> dict[str, str]:
    """Codex's environment; its config.toml (in HOME/.codex) names the scripted provider and
    trusts the `trusted` project folders (Codex ignores a project's .codex/ otherwise)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    projects = "".join(f'\n[projects."{p}"]\ntrust_level = "trusted"\n' for p in trusted)
    (codex_home / "config.toml").write_text(
        f"""model = "scripted-model"
model_provider = "scripted"
check_for_update_on_startup = false

[analytics]
enabled = false

# Plugins, remote plugins, apps and plugin sharing reach github.com and chatgpt.com at start.
[features]
plugins = false
remote_plugin = false
apps = false
plugin_sharing = false

[model_providers.scripted]
name = "Scripted model"
base_url = "{model.url}/v1"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
{projects}"""
    )
    return {**base_env(home), "CODEX_HOME": str(codex_home), **extra}


def run(
    command: list[str | Path], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One headless CLI run; fails the test with its output when it exits non-zero."""
    done = subprocess.run(
        [str(word) for word in command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"{command[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done


def claude(model: ScriptedModel, home: Path, cwd: Path, *args: str, **env: str) -> dict[str, Any]:
    """`claude -p --output-format json ARGS`: its result object."""
    done = run(
        [CLAUDE, "-p", "--output-format", "json", *args], cwd, claude_env(model, home, **env)
    )
    return dict(json.loads(done.stdout))


def codex(env: dict[str, str], cwd: Path, *args: str) -> list[dict[str, Any]]:
    """`codex exec --json --skip-git-repo-check ARGS`: its JSONL events."""
    done = run([CODEX, "exec", "--json", "--skip-git-repo-check", *args], cwd, env)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def agent_messages(events: list[dict[str, Any]]) -> list[str]:
    return [
        str(e["item"]["text"])
        for e in events
        if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
    ]


class Bridge(BridgeRun):
    """`agentworks bridge run` in the foreground, with its own folder and socket (the e2e
    tests' runner), and the CLI as the person runs it next to it."""

    def cli(self, *words: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(VENV_BIN / "agentworks"), "--config", str(self.config), *words],
            capture_output=True, text=True, env=self.env, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    def wait_queued(self, count: int, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while self.queued() != count:
            assert time.monotonic() < deadline, f"the bridge did not queue {count} message(s)"
            time.sleep(0.05)
