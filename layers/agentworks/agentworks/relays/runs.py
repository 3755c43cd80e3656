"""Relay runs (R2, R3): admission, idempotency keys, status and explicit retries.

A run is admitted against the release it is pinned to (`version`, or the one active now):
the function must exist and the input match its schema, before anything is written. The
same idempotency key from the same caller returns the original run — after later
publishes too; with a different function, input or version it is a conflict (409).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.schema_check import SchemaProblem, check
from agentworks.errors import Conflict, InvalidInput, SchemaViolation, Unavailable
from agentworks.identity.models import ADMIN, RELAYS_RUN, Principal
from agentworks.ids import new_id
from agentworks.observability import count
from agentworks.relays.records import RelayRun
from agentworks.relays.releases import RelayReleases, relay_target
from agentworks.relays.run_store import RelayRunStore, RunChanged
from agentworks.relays.views import RelayRunView, RetryRelayRun, StartRelayRun

if TYPE_CHECKING:
    from agentworks.crews.execution import Executions
    from agentworks.relays.mcp_call_store import McpCallStore

RUN_PREFIX = "rrun_"


def is_relay_run(run_id: str) -> bool:
    return run_id.startswith(RUN_PREFIX)


def _fingerprint(request: StartRelayRun) -> str:
    blob = json.dumps([request.function, request.input, request.version], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class RelayRuns:
    def __init__(
        self,
        releases: RelayReleases,
        store: RelayRunStore,
        executions: Executions,
        clock: Clock = SYSTEM_CLOCK,
        calls: McpCallStore | None = None,
    ) -> None:
        self._releases = releases
        self._store = store
        self._executions = executions
        self._clock = clock
        self._calls = calls  # the MCP tool calls its code made (issue 28)

    def start(
        self, principal: Principal, relay: str, request: StartRelayRun, caller: str | None = None
    ) -> RelayRunView:
        """`caller`: `workflow:<id>` when a running workflow's step calls (the run carries
        the authority of `principal`, that run's starter), else None."""
        release = self._releases.pinned(principal, relay, request.version)
        function = release.function(request.function)
        if function is None:
            names = ", ".join(f.name for f in release.functions)
            raise InvalidInput(
                f"Relay {relay} (release {release.version}) has no function "
                f"'{request.function}'; its functions: {names}.",
                field="function",
            )
        input_json = json.dumps(request.input, separators=(",", ":"), sort_keys=True)
        if len(input_json.encode()) > limits.RELAY_INPUT_MAX_BYTES:
            raise InvalidInput(
                f"input is at most {limits.RELAY_INPUT_MAX_BYTES // 1024} KiB as JSON.",
                field="input",
            )
        try:
            check(function.input_schema, request.input)
        except SchemaProblem as problem:
            raise SchemaViolation(
                f"input doesn't match {request.function}'s input_schema: "
                f"{problem.message.replace('data', 'input', 1)}",
                path=problem.path.replace("data", "input", 1),
            ) from None
        who = caller or principal.connection_id
        fingerprint = _fingerprint(request)
        earlier = self._store.by_key(principal.account_id, relay, who, request.idempotency_key)
        if earlier is not None:
            return self._replayed(earlier, fingerprint)
        now = int(self._clock.now() * 1000)
        run_id = new_id("rrun", self._clock)
        run = RelayRun(
            run_id=run_id,
            account_id=principal.account_id,
            relay=relay,
            function=function.name,
            version=release.version,
            input_json=input_json,
            idempotency_key=request.idempotency_key,
            fingerprint=fingerprint,
            caller=who,
            caller_connection_id=principal.connection_id,
            created_at=now,
            updated_at=now,
            execution=run_id,
        )
        if not self._store.create(run):
            raced = self._store.by_key(principal.account_id, relay, who, request.idempotency_key)
            if raced is None:
                raise Conflict("The idempotency key is being used right now; retry shortly.")
            return self._replayed(raced, fingerprint)
        self._start_execution(run)
        count("RelayRunsAccepted")
        return RelayRunView.of(run, [])

    def _replayed(self, run: RelayRun, fingerprint: str) -> RelayRunView:
        if run.fingerprint != fingerprint:
            raise Conflict(
                "idempotency_key was already used with another function, input or version; "
                "use a new key for new work.",
                field="idempotency_key",
            )
        if run.status == "queued":
            self._start_execution(run)  # an admission whose StartExecution failed midway
        return RelayRunView.of(run, self._store.steps(run.run_id), replayed=True)

    def _start_execution(self, run: RelayRun) -> None:
        from botocore.exceptions import ClientError

        from agentworks.dynamo import error_code

        try:
            self._executions.start_named(
                run.execution, {"run_id": run.run_id, "execution": run.execution}
            )
        except ClientError as error:
            if error_code(error) != "ExecutionAlreadyExists":
                raise

    def status(self, principal: Principal, run_id: str, relay: str | None = None) -> RelayRunView:
        run = self._visible(principal, run_id, relay)[0]
        calls = self._calls.calls(run_id, limits.RELAY_MCP_CALLS_SHOWN) if self._calls else None
        return RelayRunView.of(run, self._store.steps(run_id), calls=calls or ([], False))

    def retry(
        self, principal: Principal, run_id: str, request: RetryRelayRun, relay: str | None = None
    ) -> RelayRunView:
        """A new execution of a failed run; completed steps are reused, not redone."""
        run, version = self._visible(principal, run_id, relay)
        if run.status not in ("failed", "needs_reconciliation"):
            raise Conflict(
                f"Run {run_id} is {run.status}; only a failed run, or one that needs "
                "reconciliation, can be retried.",
                field="status",
            )
        steps = self._store.steps(run_id)
        if run.status == "needs_reconciliation":
            if not request.replay_uncertain:
                raise Conflict(
                    "This run needs reconciliation: check the side effects of its uncertain "
                    "steps, then retry with replay_uncertain (CLI: --replay-uncertain).",
                    field="replay_uncertain",
                )
            for step in steps:
                if step.status == "started":
                    self._store.drop_step(run_id, step.name)  # it runs again
        retries = run.retries + 1
        again = replace(
            run,
            status="queued",
            retries=retries,
            execution=f"{run_id}-retry-{retries}",
            execution_attempts=0,
            error=None,
            evidence=None,
            updated_at=int(self._clock.now() * 1000),
        )
        try:
            self._store.replace(again, version)
        except RunChanged:
            raise Conflict(f"Run {run_id} changed meanwhile; look at it and retry.") from None
        self._start_execution(again)
        count("RelayRunsRetried")
        return RelayRunView.of(again, self._store.steps(run_id))

    def _visible(
        self, principal: Principal, run_id: str, relay: str | None
    ) -> tuple[RelayRun, int]:
        """The run, if this connection called it (or administers its account without
        bounds) and may still reach its Relay; unknown and not yours look alike."""
        principal.require(RELAYS_RUN)
        found = self._store.get(run_id) if is_relay_run(run_id) else None
        if found is None:
            raise Unavailable()
        run = found[0]
        mine = run.caller_connection_id == principal.connection_id or (
            ADMIN in principal.scopes and principal.target_bounds is None
        )
        if (
            run.account_id != principal.account_id
            or not mine
            or (relay is not None and run.relay != relay)
            or not principal.may_target(relay_target(run.relay))
        ):
            raise Unavailable()
        return found
