"""Durable steps (R4): what relay code asks before and after a side-effecting step.

    start(name, safe) → run        no checkpoint: it is recorded started by this attempt
                      → done       completed earlier: its result, and the step is skipped
                      → uncertain  an earlier attempt started it and never said it finished:
                                   the side effect may or may not have happened. Replayed
                                   only when the step is declared safe; otherwise the run
                                   ends needs_reconciliation with this evidence.
    finish(name, result)           completed, by the attempt that started it

Only the run's own credential reaches these (`principal.relay_run`); anything else sees
the run as unknown.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Conflict, InvalidInput, Unavailable
from agentworks.identity.models import Principal
from agentworks.messaging.models import iso
from agentworks.observability import count
from agentworks.relays.records import Checkpoint
from agentworks.relays.run_store import RelayRunStore, StepLimitReached
from agentworks.relays.views import StepDecision

# It travels in a URL path as it is: no "/", ":", spaces or anything to escape.
STEP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class DurableSteps:
    def __init__(self, store: RelayRunStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def start(self, principal: Principal, run_id: str, name: str, safe: bool) -> StepDecision:
        attempt = self._own_attempt(principal, run_id)
        _check_name(name)
        now = int(self._clock.now() * 1000)
        fresh = Checkpoint(name=name, status="started", attempt=attempt, safe=safe, started_at=now)
        try:
            existing = self._store.start_step(run_id, fresh)
        except StepLimitReached:
            raise Conflict(
                f"A run has at most {limits.RELAY_STEPS_MAX} durable steps; this one has them "
                "all. Batch the work into fewer steps (one step can return a list).",
                field="name",
            ) from None
        if existing is None:
            count("RelayStepsStarted")
            return StepDecision(decision="run")
        if existing.status == "completed":
            count("RelayStepsReused")
            result = json.loads(existing.result_json) if existing.result_json else None
            return StepDecision(decision="done", result=result)
        if existing.attempt >= attempt:
            raise Conflict(
                f"Step '{name}' was already started by this attempt: each durable step of a "
                "run needs a name of its own (add the loop index, e.g. 'fetch-3').",
                field="name",
            )
        if existing.safe or safe:
            again = replace(
                existing,
                attempt=attempt,
                started_at=now,
                safe=existing.safe or safe,
                replays=existing.replays + 1,
            )
            if self._store.restart_step(run_id, again, existing.attempt):
                count("RelayStepsReplayed")
                return StepDecision(decision="run")
            raise Conflict(f"Step '{name}' was taken by another attempt.", field="name")
        return StepDecision(
            decision="uncertain",
            evidence={
                "step": name,
                "started_at": iso(existing.started_at),
                "started_by_attempt": existing.attempt,
                "attempt": attempt,
                "reason": "an earlier attempt started this step and never recorded that it "
                "finished; it is not declared safe to replay",
            },
        )

    def finish(self, principal: Principal, run_id: str, name: str, result: Any) -> None:
        attempt = self._own_attempt(principal, run_id)
        _check_name(name)
        text = json.dumps(result, separators=(",", ":"))
        if len(text.encode()) > limits.RELAY_STEP_RESULT_MAX_BYTES:
            raise InvalidInput(
                f"A step's result is at most {limits.RELAY_STEP_RESULT_MAX_BYTES // 1024} KiB "
                "as JSON; keep large data elsewhere and return a reference.",
                field="result",
            )
        done = self._store.finish_step(run_id, name, attempt, int(self._clock.now() * 1000), text)
        if not done:
            raise Conflict(f"Step '{name}' was not started by this attempt.", field="name")

    def abandon(self, principal: Principal, run_id: str, name: str) -> None:
        """The step raised: it did not happen, so the next attempt runs it (not uncertain)."""
        attempt = self._own_attempt(principal, run_id)
        _check_name(name)
        self._store.abandon_step(run_id, name, attempt)

    def _own_attempt(self, principal: Principal, run_id: str) -> int:
        """The attempt of the run's credential: authentication read the run just now and
        found it running that attempt (no second read; the writes are conditioned on it)."""
        if principal.relay_run != run_id or principal.relay_attempt < 1:
            raise Unavailable()
        return principal.relay_attempt


def _check_name(name: str) -> None:
    if not (0 < len(name) <= limits.RELAY_STEP_NAME_MAX_CHARS) or not STEP_NAME.match(name):
        raise InvalidInput(
            f"A step's name is 1–{limits.RELAY_STEP_NAME_MAX_CHARS} letters, digits and "
            "'_.-', from a letter or digit.",
            field="name",
        )
