"""Building the MCP server leaves the process's logging alone (issue 13): MCPServer's own
log setup (logging.basicConfig with a `rich` handler) is skipped while agentworks builds
it, so no second root handler prints every line twice and rich is not imported at init.
In a fresh interpreter, as Lambda loads the function; a plain MCPServer built after shows
the SDK still does that setup, so the check is not vacuous."""

from __future__ import annotations

import json
import subprocess
import sys

from bench import cold_start

_FRESH = """
import json, logging, sys
sys.path[:0] = {paths!r}
root = logging.getLogger()
before = [len(root.handlers), root.level]
import app  # builds the server at init
from mcp.server.mcpserver import MCPServer, server as sdk
from mcp.server.mcpserver.utilities.logging import configure_logging
seen = {{
    "before": before,
    "after_build": [len(root.handlers), root.level],
    "rich_at_init": "rich" in sys.modules,
    "setup_restored": sdk.configure_logging is configure_logging,
}}
MCPServer(name="plain")
seen["after_plain_server"] = [len(root.handlers), "rich" in sys.modules]
print(json.dumps(seen))
"""


def test_building_the_server_skips_the_sdks_log_setup() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FRESH.format(paths=cold_start.handler_path("mcp"))],
        capture_output=True,
        text=True,
        env=cold_start.lambda_environment(),
        cwd=cold_start.ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["after_build"] == seen["before"]
    assert seen["rich_at_init"] is False
    assert seen["setup_restored"] is True
    # The SDK's setup, when not skipped: a root handler (rich's, where rich is installed).
    assert seen["after_plain_server"][0] == seen["before"][0] + 1
