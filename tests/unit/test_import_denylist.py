"""Cold start stays lean (issue 13): importing a function's handler module, the way Lambda
does at init, loads none of the packages a handler runs without. Not timed: the bench
measures time; this fails on what was loaded, so a stray top-level import can't creep back.

Each function is imported in its own fresh interpreter with the bench's sys.path (the
function's folder, then the layer) and the deployed environment (tracing on, as with
`Tracing: Active`), so the figures `make bench` reports are the ones this guards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentworks.http_api.groups import GROUPS
from bench import cold_start

# Loaded on first use or never in a deployed function.
DENIED = {
    "aws_xray_sdk": "the X-Ray SDK: observability.tracer loads it on the first sampled call",
    "wrapt": "the X-Ray SDK's patching",
    "mcp": "the MCP SDK, the mcp function's alone",
    "mcp_types": "the MCP SDK's models, the mcp function's alone",
    "agentworks_cli": "the CLI and its local stack",
    "moto": "the local stack's in-memory AWS",
    "rich": "terminal rendering: MCPServer's log setup would load it (mcp_server.server skips it)",
    "a2a": "the A2A SDK: the a2a function loads it on its first request",
    "google": "protobuf, the A2A SDK's types",
}
ALLOWED = {"mcp": {"mcp", "mcp_types"}}
# Modules (and their submodules) a function loads on a request's first use, not at init.
_ROUTE_GROUP = "a route group: loaded on the first request for one of its paths"
DENIED_MODULES = {
    "api": {
        **{f"agentworks.http_api.{group.module}": _ROUTE_GROUP for group in GROUPS},
        "agentworks.messaging": "messages and the directory: the messages group's",
        "agentworks.crews": "Crews, functions and calls: the crews, adapters, wakeups groups'",
        "agentworks.workflows": "workflow runs and definitions: the workflow groups'",
        "agentworks.relays": "Relays: the relays group's",
        "agentworks.runtime": "the services' wiring: built by the first route that needs one",
    },
}

_PROBE = """
import json, sys
sys.path[:0] = {paths!r}
import app
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_at_init(function: str) -> set[str]:
    """The modules loaded by importing the function's handler, by full name."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(paths=cold_start.handler_path(function))],
        capture_output=True,
        text=True,
        env=cold_start.lambda_environment(),
        cwd=cold_start.ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_every_function_is_checked() -> None:
    folders = {p.parent.name for p in Path(cold_start.ROOT, "functions").glob("*/app.py")}
    assert set(cold_start.HANDLERS) == folders and "api" in folders


@pytest.mark.parametrize("function", cold_start.HANDLERS)
def test_handler_import_loads_nothing_denied(function: str) -> None:
    loaded = _loaded_at_init(function)
    packages = {name.split(".")[0] for name in loaded}
    denied = {name: DENIED[name] for name in DENIED if name in packages}
    for name in ALLOWED.get(function, set()):
        denied.pop(name, None)
    for prefix, why in DENIED_MODULES.get(function, {}).items():
        if any(name == prefix or name.startswith(prefix + ".") for name in loaded):
            denied[prefix] = why
    assert not denied, f"functions/{function}/app.py loads at init: " + "; ".join(
        f"{name} ({why})" for name, why in sorted(denied.items())
    )
