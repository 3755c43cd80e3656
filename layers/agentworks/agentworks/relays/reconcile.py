"""Relay runs whose execution ended without recording an outcome (R5), found by the tick —
and, on the local stack, runs whose execution a restart lost, resumed.

An execution can end without its run hearing of it: stopped by hand, timed out, failed in
a way the Catch did not see, or (locally) lost with the process. Every run not yet terminal
sits in the sparse OpenCalls index (relays.run_store); the tick asks Step Functions about
the due ones: a running execution is asked about again later, an ended or missing one ends
its run `failed` with that evidence — completed steps stay, so `relays retry` continues it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.observability import count
from agentworks.relays.run_store import RelayRunStore, RunChanged
from agentworks.usage.call_usage import relay_usage

if TYPE_CHECKING:
    from agentworks.crews.execution import Executions

_RUNNING = "RUNNING"


class RelayReconciler:
    def __init__(
        self, runs: RelayRunStore, executions: Executions, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._runs = runs
        self._executions = executions
        self._clock = clock

    def reconcile(self) -> dict[str, int]:
        now = int(self._clock.now() * 1000)
        checked = ended = 0
        for run_id in self._runs.open_runs(now, limits.RECONCILE_CALLS_PER_TICK):
            checked += 1
            found = self._runs.get(run_id)
            if found is None or found[0].terminal:
                continue
            run, version = found
            status = self._executions.status_of_call(run.execution)
            if status == _RUNNING:
                self._runs.recheck(run_id, now + limits.RECONCILE_RECHECK_SECONDS * 1000)
                continue
            why = (
                "its execution was never started"
                if status is None
                else f"its execution ended ({status}) without recording an outcome"
            )
            ended_run = replace(
                run,
                status="failed",
                credential_hash="",
                updated_at=now,
                error=f"{why}; completed steps are kept: agentworks relays retry {run_id}",
            )
            # An execution that ran entered its Attempt at least (what it did after is lost).
            usage = relay_usage(1) if status is not None else None
            try:
                self._runs.replace(ended_run, version, usage=usage)
            except RunChanged:
                continue  # it moved meanwhile: the next tick looks again
            ended += 1
        count("RelayRunsReconciled", ended)
        return {"relay_runs_checked": checked, "relay_runs_reconciled": ended}

    def resume_all(self) -> list[str]:
        """Local stack, after a restart: every open run gets a new execution, which reuses
        its completed steps (a step in flight at the stop is uncertain, as after a crash)."""
        resumed = []
        # Local only, once at start: every open run, however many (no page to resume from).
        for run_id in self._runs.open_runs(None, 10_000):
            found = self._runs.get(run_id)
            if found is None or found[0].terminal:
                continue
            run, version = found
            again = replace(
                run,
                status="queued",
                execution=f"{run_id}-resume-{run.attempt}",
                execution_attempts=0,
                credential_hash="",
                updated_at=int(self._clock.now() * 1000),
            )
            self._runs.replace(again, version)
            self._executions.start_named(
                again.execution, {"run_id": run_id, "execution": again.execution}
            )
            resumed.append(run_id)
        return resumed
