"""The README's MCP section names every action of every tool (SPEC §10), read from the
tools' own action tables, so a new action cannot ship undocumented."""

from __future__ import annotations

import re
from pathlib import Path

from agentworks.mcp_server import (
    adapters_tool,
    crews_tool,
    functions_tool,
    mcp_servers_tool,
    messages_tool,
    relays_tool,
    workflows_tool,
)

README = Path(__file__).resolve().parents[2] / "README.md"
TOOLS = {
    messages_tool.TOOL_NAME: messages_tool.ACTIONS,
    crews_tool.TOOL_NAME: crews_tool.ACTIONS,
    functions_tool.TOOL_NAME: functions_tool.ACTIONS,
    adapters_tool.TOOL_NAME: adapters_tool.ACTIONS,
    mcp_servers_tool.TOOL_NAME: mcp_servers_tool.ACTIONS,
    relays_tool.TOOL_NAME: relays_tool.ACTIONS,
}


def _mcp_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Connect Claude Code or Codex (MCP)")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _documented() -> dict[str, set[str]]:
    """tool -> actions, from the section's `| tool | action | … |` table rows."""
    documented: dict[str, set[str]] = {}
    tool = ""
    for row in re.findall(r"^\|(.*)\|$", _mcp_section(), flags=re.MULTILINE):
        cells = [c.strip() for c in row.split("|")]
        if len(cells) < 3 or not cells[1].startswith("`"):
            continue
        tool = cells[0].strip("`") or tool
        if tool.startswith("workflow_"):
            continue  # one tool per operation: their own table (below)
        documented.setdefault(tool, set()).add(cells[1].strip("`"))
    return documented


def test_readme_lists_every_action_of_every_tool() -> None:
    assert _documented() == {name: set(actions) for name, actions in TOOLS.items()}


def test_readme_lists_every_workflow_tool() -> None:
    section = _mcp_section()
    for action in workflows_tool.ACTIONS:
        assert f"| `{workflows_tool.tool_name(action)}` |" in section, action
