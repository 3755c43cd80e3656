"""Relay code on the local stack calls an attached MCP server (issue 28), end to end:
`agentworks dev` (loopback servers allowed, as `--allow-loopback-webhooks` allows them),
the CLI publishing and running a Relay whose code runs sandboxed where bubblewrap is
installed, the real MCP test server. The code gets the tool's result and its own error as a
result; `relays status` lists the calls; the server's secret is in no answer, no part of the
code's environment, and no line of the stack's logs."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LOOPBACK, LocalStack, http, running_local_stack
from tests.e2e.test_cli_messages import Cli
from tests.support.mcp_test_server import McpTestServer, mcp_test_server

pytestmark = pytest.mark.e2e

CODE = """
    import os
    from agentworks_relay import platform, step

    async def run(INPUT):
        tools = platform.mcp("tools")
        echoed = await tools.call("echo", {"text": "from the sandbox"})

        async def check():
            return (await tools.call("fails", {})).is_error

        return {
            "echo": echoed.text,
            "fails_is_error": await step("check", check),
            "environment": dict(os.environ),
        }
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with running_local_stack(tmp_path_factory, LOOPBACK) as stack:
        yield stack


@pytest.fixture
def server() -> Iterator[McpTestServer]:
    with mcp_test_server() as started:
        yield started


def test_relay_code_calls_an_attached_server_through_the_local_stack(
    stack: LocalStack, server: McpTestServer, tmp_path: Path
) -> None:
    admin = stack.admin_token
    attached = {
        "name": "tools",
        "url": server.url,
        "headers": {"Authorization": f"Bearer {server.token}"},
    }
    status, body, _ = http("POST", f"{stack.url}/v1/mcp-servers", admin, attached)
    assert status == 201, body
    folder = tmp_path / "caller"
    folder.mkdir()
    (folder / "relay.yaml").write_text(
        "name: caller\nfunctions:\n  - name: run\n    entrypoint: main:run\n"
        "mcp_tools:\n  - server: tools\n    tools: [echo, fails]\n"
    )
    (folder / "main.py").write_text(textwrap.dedent(CODE))
    cli = Cli(stack)
    cli.ok("relays", "publish", str(folder))
    done = cli("relays", "run", "caller", "run", "--input", "{}", "--wait")
    assert done.code == 0, done
    result: dict[str, Any] = json.loads(done.out)
    assert (result["echo"], result["fails_is_error"]) == ("from the sandbox", True)
    assert [c.tool for c in server.calls()] == ["echo", "fails"]
    run_id = done.err.split("rrun_", 1)[1].split()[0].strip(":").strip()
    shown = cli.ok("relays", "status", f"rrun_{run_id}").out
    assert "mcp tool calls:" in shown
    assert "tools/echo" in shown and "tools/fails" in shown and "tool_error" in shown
    secret = server.token
    assert secret not in json.dumps(result["environment"])
    assert secret not in shown and secret not in done.out + done.err
    logs = stack.stdout() + stack.stderr()
    # The stack's request log shows the code's calls, with the run's credential, not the secret.
    assert "POST /v1/mcp-servers/tools/tools/echo:call 200" in logs
    assert secret not in logs
