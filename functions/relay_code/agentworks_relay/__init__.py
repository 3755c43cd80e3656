"""The Relay SDK: durable steps and the platform, from inside a Relay's code.

    from agentworks_relay import platform, step

    async def run(INPUT):
        order = await step("charge", charge_card, INPUT["card"])       # at most once
        total = await step("total", add_up, order, safe=True)          # may run again
        platform.send("done", target="agent:billing")
        found = await platform.mcp("github").call("search_issues", {"q": "bug"})
        # found.is_error: the tool's own error (a result); McpCallError: refused or failed
        return {"total": total}

A step's result is checkpointed when it returns: a retried run reuses it and does not call
the function again. If an attempt is lost inside a step (the process died before it said
so), the step is *uncertain*: it runs again only if declared `safe=True`; otherwise the run
ends `needs_reconciliation` with the evidence. A step that raises did not take effect and
runs again on the next attempt.

Legacy programs take `run(INPUT, ctx)`; `ctx.step(name, fn, *args, safe=False)` is the same
step without await, `ctx.platform` the same client. Only the standard library is imported:
relay code runs in a process of its own that holds just this run's credential.
"""

from __future__ import annotations

from agentworks_relay._platform import (
    McpCallError,
    McpResult,
    McpServer,
    Platform,
    PlatformError,
    platform,
)
from agentworks_relay._steps import Context, NeedsReconciliation, attempt, run_id, step

__all__ = [
    "Context",
    "McpCallError",
    "McpResult",
    "McpServer",
    "NeedsReconciliation",
    "Platform",
    "PlatformError",
    "attempt",
    "platform",
    "run_id",
    "step",
]
