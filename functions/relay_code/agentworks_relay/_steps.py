"""Durable steps: checkpoints kept by the platform, per run (see agentworks_relay)."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable
from typing import Any

from agentworks_relay._platform import Platform, current_step, platform


class NeedsReconciliation(Exception):
    """A lost attempt left this step uncertain, and it is not safe to replay."""

    def __init__(self, evidence: dict[str, Any]) -> None:
        super().__init__(f"step '{evidence.get('step')}' is uncertain")
        self.evidence = evidence


def run_id() -> str:
    return os.environ.get("AGENTWORKS_RUN_ID", "")


def attempt() -> int:
    """1 for a run's first attempt; retries count on (completed steps are not redone)."""
    return int(os.environ.get("AGENTWORKS_ATTEMPT", "1"))


def _begin(client: Platform, name: str, safe: bool) -> tuple[bool, Any]:
    """(False, result) when the step completed before; (True, None) when it runs now."""
    decision = client.start_step(name, safe)
    if decision["decision"] == "done":
        return False, decision.get("result")
    if decision["decision"] == "uncertain":
        raise NeedsReconciliation(decision.get("evidence") or {"step": name})
    return True, None


async def step(
    name: str, fn: Callable[..., Any], *args: Any, safe: bool = False, **kwargs: Any
) -> Any:
    """Runs `fn(*args, **kwargs)` once per run (sync or async); its JSON result is kept."""
    runs, earlier = await asyncio.to_thread(_begin, platform, name, safe)
    if not runs:
        return earlier
    inside = current_step.set(name)  # tool calls made inside are recorded on this step
    try:
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
    except BaseException:
        current_step.reset(inside)
        await asyncio.to_thread(platform.abandon_step, name)
        raise
    current_step.reset(inside)
    await asyncio.to_thread(platform.finish_step, name, value)
    return value


class Context:
    """The `ctx` of a legacy `run(INPUT, ctx)`."""

    def __init__(self, client: Platform | None = None) -> None:
        self.platform = client or platform
        self.run_id = run_id()
        self.attempt = attempt()

    def step(
        self, name: str, fn: Callable[..., Any], *args: Any, safe: bool = False, **kwargs: Any
    ) -> Any:
        runs, earlier = _begin(self.platform, name, safe)
        if not runs:
            return earlier
        inside = current_step.set(name)
        try:
            value = fn(*args, **kwargs)
        except BaseException:
            self.platform.abandon_step(name)
            raise
        finally:
            current_step.reset(inside)
        self.platform.finish_step(name, value)
        return value

    def send(self, message: str, **where: Any) -> dict[str, Any]:
        return self.platform.send(message, **where)

    def call(
        self,
        target: str,
        function: str,
        args: dict[str, Any] | None = None,
        submission_id: str | None = None,
    ) -> dict[str, Any]:
        return self.platform.call(target, function, args, submission_id)

    def log(self, *values: Any) -> None:
        print(*values, flush=True)  # the code function's log
