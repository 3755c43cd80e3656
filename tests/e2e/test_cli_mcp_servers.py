"""Attached MCP servers through the `agentworks` CLI, run as a subprocess against the local
stack (issue 28): a real MCP server (official SDK, bearer-protected) is attached with
`--bearer-from-env`, listed, shown with its tools (fetched by the stack with the official
client), its credential rotated by `update` (a wrong one shows the server's 401), and
removed; the bearer token appears in no output of the CLI nor of the stack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import LOOPBACK, LocalStack, running_local_stack
from tests.e2e.test_cli_messages import Cli
from tests.support.mcp_test_server import McpTestServer, mcp_test_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with running_local_stack(tmp_path_factory, LOOPBACK) as stack:
        yield stack


@pytest.fixture
def server() -> Iterator[McpTestServer]:
    with mcp_test_server() as started:
        yield started


def test_an_admin_manages_mcp_servers_with_the_cli(
    local_stack: LocalStack, server: McpTestServer
) -> None:
    cli = Cli(local_stack)
    cli.env["TOOLS_TOKEN"] = server.token
    outputs: list[str] = []

    added = cli.ok(
        "mcp-servers", "add", "tools", "--url", server.url, "--bearer-from-env", "TOOLS_TOKEN"
    )
    outputs.append(added.out + added.err)
    assert "attached MCP server tools (version 1)" in added.out
    assert "headers: Authorization (values not shown)" in added.out

    listed = cli.ok("mcp-servers", "list")
    outputs.append(listed.out)
    assert any(line.split()[:3] == ["tools", server.url, "1"] for line in listed.out.splitlines())

    shown = cli.ok("mcp-servers", "show", "tools")
    outputs.append(shown.out)
    tools = [line.split()[0] for line in shown.out.split("tools:\n", 1)[1].splitlines()]
    assert sorted(tools) == ["big", "echo", "fails", "slow"]
    assert any(s.rpc_method == "tools/list" and s.authorized for s in server.requests)
    as_json = cli.ok("mcp-servers", "show", "tools", "--json").json()
    assert as_json["header_names"] == ["Authorization"] and as_json["tools_error"] is None

    rotated = cli.ok("mcp-servers", "update", "tools", "--header", "Authorization: Bearer stale")
    outputs.append(rotated.out)
    assert "updated MCP server tools (version 2)" in rotated.out
    refused = cli.ok("mcp-servers", "show", "tools")
    outputs.append(refused.out)
    assert "could not be fetched" in refused.out and "HTTP 401" in refused.out

    removed = cli.ok("mcp-servers", "remove", "tools")
    assert removed.out.strip() == "removed MCP server tools"
    gone = cli("mcp-servers", "show", "tools")
    assert gone.code == 4 and "Traceback" not in gone.err, gone

    everything = "\n".join(outputs) + local_stack.stdout() + local_stack.stderr()
    assert server.token not in everything and "Bearer stale" not in everything


def test_bad_options_say_what_is_wrong(local_stack: LocalStack) -> None:
    cli = Cli(local_stack)
    bad = cli("mcp-servers", "add", "x", "--url", "https://mcp.invalid/mcp", "--header", "novalue")
    assert bad.code == 2 and "--header takes 'NAME: VALUE'" in bad.err, bad
    empty = cli(
        "mcp-servers",
        "add",
        "x",
        "--url",
        "https://mcp.invalid/mcp",
        "--bearer-from-env",
        "UNSET_VAR_X",
    )
    assert empty.code == 2 and "UNSET_VAR_X is empty" in empty.err, empty
    private = cli("mcp-servers", "add", "x", "--url", "https://10.0.0.1/mcp")
    assert private.code != 0 and "Refused MCP server URL" in private.err, private
