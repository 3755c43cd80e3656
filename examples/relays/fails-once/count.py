"""The fails-once Relay: its first execution fails after a completed step, so a retry shows
the step reused (its checkpoint), not run again."""

from __future__ import annotations

from typing import Any

from agentworks_relay import attempt, step

# An execution makes up to 3 attempts (limits.RELAY_ATTEMPTS_MAX); `attempt()` counts on
# across retries, so the retry's first attempt is the 4th.
ATTEMPTS_OF_ONE_EXECUTION = 3


async def run(INPUT: dict[str, Any]) -> dict[str, Any]:  # the Relay contract names it INPUT
    words = await step("count", lambda: len(INPUT["text"].split()))
    if attempt() <= ATTEMPTS_OF_ONE_EXECUTION:
        raise RuntimeError(f"attempt {attempt()} fails on purpose: retry the run")
    return {"words": words}
