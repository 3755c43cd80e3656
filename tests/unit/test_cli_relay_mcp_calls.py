"""`agentworks relays status RUN` lists the MCP tool calls the run's code made (issue 28):
tool, step, outcome, duration, result size and error, one row each."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agentworks_cli.commands.formatting import table
from agentworks_cli.commands.relay_runs import show_run


def test_the_run_view_lists_its_mcp_tool_calls() -> None:
    lines: list[str] = []
    session: Any = SimpleNamespace(
        out=lines.append,
        out_table=lambda headers, rows, indent="": lines.extend(
            indent + line for line in table(headers, rows)
        ),
    )
    call = {
        "server": "github",
        "tool": "search_issues",
        "step": "look",
        "attempt": 1,
        "outcome": "tool_error",
        "duration_ms": 42,
        "result_bytes": 310,
        "error": None,
    }
    refused = {**call, "tool": "delete_repo", "step": None, "outcome": "refused"}
    refused.update(duration_ms=0, result_bytes=0, error="No mcp_tools declaration admits it")
    run = {
        "run_id": "rrun_1",
        "relay": "triage",
        "function": "run",
        "version": 3,
        "status": "succeeded",
        "terminal": True,
        "attempts": 1,
        "caller": "conn_1",
        "created_at": "2026-12-03T10:00:00Z",
        "updated_at": "2026-12-03T10:00:01Z",
        "steps": [],
        "result": {"ok": True},
        "mcp_calls": [call, refused],
        "mcp_calls_more": True,
    }
    show_run(session, run)
    start = lines.index("mcp tool calls: (the first ones)")
    header, first, second = (line.split() for line in lines[start + 1 : start + 4])
    assert header == ["TOOL", "STEP", "OUTCOME", "TOOK", "BYTES", "ERROR"]
    assert first == ["github/search_issues", "look", "tool_error", "42", "ms", "310"]
    assert second[:5] == ["github/delete_repo", "-", "refused", "0", "ms"]
    assert lines[start + 3].endswith("No mcp_tools declaration admits it")
