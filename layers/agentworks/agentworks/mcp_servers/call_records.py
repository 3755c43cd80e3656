"""One MCP tool call as a turn's or a step's record keeps it (issue 28 item 4): server,
tool, outcome, duration and result size, with the arguments and the result the model read
beside them — inline while small, otherwise kept outside the record and named by it.

The same entry comes of a call the platform makes inside a turn (crews.mcp_tool_use) and
of one a `lambda` adapter's agent makes by call token (token_calls), so a run's page and
its status read one shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentworks import limits

# (name, JSON bytes) → where it was kept (a path the record names).
Keep = Callable[[str, bytes], str]


def result_text(content: list[dict[str, Any]], structured: dict[str, Any] | None) -> str:
    """A result as the model reads it: text items joined, other items as JSON."""
    parts = [
        str(item.get("text", "")) if item.get("type") == "text" else json.dumps(item)
        for item in content
    ]
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def call_entry(
    index: int,
    server: str,
    tool: str,
    outcome: str,
    duration_ms: int,
    result_bytes: int,
    arguments: Any,
    text: str,
    keep: Keep,
) -> dict[str, Any]:
    """The record of the turn's `index`th call (from 1); `text` is the result (or the
    error) as the agent read it."""
    entry: dict[str, Any] = {
        "server": str(server)[: limits.MCP_SERVER_NAME_MAX_CHARS],
        "tool": str(tool)[: limits.MCP_TOOL_NAME_MAX_CHARS],
        "outcome": outcome,
        "duration_ms": duration_ms,
        "result_bytes": result_bytes,
    }
    # Sized as stored: the compact JSON of {"arguments", "result"}, UTF-8.
    content = {"arguments": arguments, "result": text}
    encoded = json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    if len(encoded) <= limits.MCP_CALL_RECORD_INLINE_MAX_BYTES:
        entry.update(content)
    else:
        entry["content_file"] = keep(f"mcp-calls/{index:03d}.json", encoded)
    return entry
