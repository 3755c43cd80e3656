"""What a run's end adds to its account's usage: a Crew run's, one function call (a run for
a message or a wakeup is not a call) and the states its execution entered; a Relay run
execution's, one function call and its states (workflow runs count only their states,
workflows/engine.py)."""

from __future__ import annotations

from agentworks.usage.counts import Counts


def call_usage(kind: str, transitions: int, mcp_tool_calls: int = 0) -> Counts:
    """A Crew run's end: its call record's kind, the states its execution entered and the
    MCP tool calls its turns made."""
    return Counts(
        function_calls=1 if kind == "function" else 0,
        state_transitions=transitions,
        mcp_tool_calls=mcp_tool_calls,
    )


def relay_usage(entered: int) -> Counts:
    """A Relay run's execution ended: Attempt (retries inside it are that one state), and
    RecordFailure when the attempt itself crashed."""
    return Counts(function_calls=1, state_transitions=entered)
