"""The tools a Bedrock model is offered beyond the platform's own (issue 28 item 3): the
turn's admitted MCP tools, and a workflow step's functions (W10).

MCP tools keep their input schemas as their servers give them; their names are made
Bedrock-safe (`[A-Za-z0-9_-]{1,64}`, unique in the turn) and mapped back to (server, tool)
when the model uses one. Each use is one call through the turn's `McpToolUse` (checked,
bounded, recorded there); its result goes back as the toolResult, with `status: error` for
the tool's own error, a refusal or a failure — the model decides what to do next.

A workflow step's session may list and call functions (`functions_list`, `functions_call`),
as the scripted adapter's `call` rule does, through the step's FunctionAccess.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentworks.crews.adapters.base import AdapterError, TurnRequest

FUNCTIONS_LIST = "functions_list"
FUNCTIONS_CALL = "functions_call"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_MAX = 64


def bedrock_name(server: str, tool: str, taken: set[str]) -> str:
    """A Bedrock-safe tool name for `tool` of `server`, not in `taken`: `mcp_<server>_<tool>`
    with unsafe characters as `_`, shortened with a hash of the pair when too long or taken."""
    name = _UNSAFE.sub("_", f"mcp_{server}_{tool}")
    if len(name) <= _NAME_MAX and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:10]
    return f"{name[: _NAME_MAX - 11]}_{digest}"


@dataclass
class SessionTools:
    """The extra tools of one turn: their Converse specs and how to run a use of one."""

    request: TurnRequest
    specs: list[dict[str, Any]] = field(default_factory=list)
    _mcp: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, request: TurnRequest, reserved: set[str]) -> SessionTools:
        made = cls(request)
        taken = set(reserved)
        if request.mcp_tools is not None:
            for tool in request.mcp_tools.tools():
                name = bedrock_name(tool.server, tool.name, taken)
                taken.add(name)
                made._mcp[name] = (tool.server, tool.name)
                description = tool.description or f"{tool.name} of MCP server {tool.server}"
                made.specs.append(
                    {
                        "toolSpec": {
                            "name": name,
                            "description": f"[MCP server {tool.server}] {description}"[:4096],
                            "inputSchema": {"json": tool.input_schema or {"type": "object"}},
                        }
                    }
                )
        if request.functions is not None:
            made.specs.extend(_function_specs())
        return made

    def names(self) -> set[str]:
        return {spec["toolSpec"]["name"] for spec in self.specs}

    def run(self, name: str, arguments: Any) -> tuple[str, bool] | None:
        """(text, is_error) for a use of one of these tools; None for another tool."""
        if name in self._mcp and self.request.mcp_tools is not None:
            server, tool = self._mcp[name]
            outcome = self.request.mcp_tools.call(server, tool, arguments)
            return outcome.text or f"({outcome.outcome}, no content)", outcome.is_error
        functions = self.request.functions
        if functions is None or name not in (FUNCTIONS_LIST, FUNCTIONS_CALL):
            return None
        if not isinstance(arguments, dict) or not isinstance(arguments.get("target"), str):
            return "Error: 'target' (e.g. crew:NAME) is required.", True
        try:
            if name == FUNCTIONS_LIST:
                return json.dumps(functions.list(arguments["target"]), default=str), False
            if not isinstance(arguments.get("function"), str):
                return "Error: 'function' is required.", True
            args = arguments.get("args") or {}
            if not isinstance(args, dict):
                return "Error: 'args' must be an object.", True
            status = functions.call_and_wait(arguments["target"], arguments["function"], args)
        except AdapterError as refused:  # a refusal is the model's to handle
            return str(refused), True
        return json.dumps(status, default=str), status.get("state") != "succeeded"


def _function_specs() -> list[dict[str, Any]]:
    target = {"type": "string", "description": "crew:NAME, workflow:NAME or relay:NAME"}
    return [
        {
            "toolSpec": {
                "name": FUNCTIONS_LIST,
                "description": "List the functions a target offers this step.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"target": target},
                        "required": ["target"],
                    }
                },
            }
        },
        {
            "toolSpec": {
                "name": FUNCTIONS_CALL,
                "description": "Call a function of a target and wait for its outcome.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {
                            "target": target,
                            "function": {"type": "string"},
                            "args": {"type": "object"},
                        },
                        "required": ["target", "function"],
                    }
                },
            }
        },
    ]
