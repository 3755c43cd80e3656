"""The host of a run's attempts (R4, R5): the task of statemachines/relay_run.asl.json.

Each attempt re-checks the caller's authority as it is now, mints a credential for this
attempt only, and hands the pinned release, the entrypoint and the input to the relay code
function — a Lambda of its own whose role reaches no table (locally, a separate process).
The code's outcome is recorded here:

    succeeded              the final JSON
    failed                 with attempts left: `retrying`, and RelayAttemptFailed for the
                           ASL Retry (completed steps are reused by the next attempt)
    needs_reconciliation   an uncertain step that is not safe to replay: the evidence
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.identity import tokens
from agentworks.identity.models import RELAYS_RUN
from agentworks.observability import count, logger
from agentworks.relays.credentials import format_credential
from agentworks.relays.records import RelayRun, RunStatus
from agentworks.relays.releases import RelayReleases, relay_target
from agentworks.relays.run_store import RelayRunStore
from agentworks.usage.call_usage import relay_usage

if TYPE_CHECKING:
    from agentworks.identity.connection_store import ConnectionStore

Launch = Callable[[dict[str, Any]], dict[str, Any]]  # the code function's event → outcome


class RelayAttemptFailed(Exception):
    """An attempt failed and attempts are left: the state machine's Retry matches this name."""


class RelayHost:
    def __init__(
        self,
        runs: RelayRunStore,
        releases: RelayReleases,
        connections: ConnectionStore,
        launch: Launch,
        api_url: str | Callable[[], str],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._runs = runs
        self._releases = releases
        self._connections = connections
        self._launch = launch
        # Where relay code calls the platform (the HTTP API): given, or learned on first use.
        self._api_url = api_url
        self._clock = clock

    @property
    def api_url(self) -> str:
        """The HTTP API's URL, resolved once (deployed, it comes from an SSM parameter)."""
        if callable(self._api_url):
            self._api_url = self._api_url()
        return self._api_url

    @api_url.setter
    def api_url(self, url: str | Callable[[], str]) -> None:
        self._api_url = url

    def handle(self, event: dict[str, Any]) -> dict[str, Any]:
        action = event.get("action")
        if action == "attempt":
            return self.attempt(str(event["run_id"]), str(event["execution"]))
        if action == "fail":
            return self.record_failure(
                str(event["run_id"]), str(event["execution"]), event.get("failure")
            )
        raise ValueError(f"unknown relay action {action!r}")

    def attempt(self, run_id: str, execution: str) -> dict[str, Any]:
        found = self._runs.get(run_id)
        if found is None:
            return {"status": "missing"}
        run, version = found
        if run.terminal or run.execution != execution:
            return {"status": run.status}  # a stale or repeated execution changes nothing
        refusal = self._authority_refusal(run)
        if refusal:
            self._end(run, version, "failed", error=refusal)
            return {"status": "failed"}
        release = self._releases.release(run.account_id, run.relay, run.version)
        function = release.function(run.function) if release else None
        if release is None or function is None:
            self._end(run, version, "failed", error="the pinned release is gone")
            return {"status": "failed"}
        api_url = self.api_url  # read before the run changes: a failed read leaves it as is
        secret = tokens.new_secret()
        run = replace(
            run,
            status="running",
            attempt=run.attempt + 1,
            execution_attempts=run.execution_attempts + 1,
            credential_hash=tokens.hash_secret(secret),
            updated_at=self._now(),
            attempt_started_at=self._now(),
        )
        version = self._runs.replace(run, version)
        module, _, attribute = function.entrypoint.partition(":")
        outcome = self._launch(
            {
                "run_id": run.run_id,
                "attempt": run.attempt,
                "api_url": api_url,
                "credential": format_credential(run.account_id, run.run_id, secret),
                "relay": run.relay,
                "function": run.function,
                "module": module,
                "attribute": attribute,
                "input": run.input,
                "content_hash": release.content_hash,
                "archive_b64": base64.b64encode(self._releases.archive(release)).decode(),
                "timeout_seconds": limits.RELAY_RUN_TIMEOUT_SECONDS,
            }
        )
        return self._record(run, version, outcome)

    def _authority_refusal(self, run: RelayRun) -> str | None:
        """Admission's checks, again, as the caller's connection is now."""
        connection = self._connections.get_live_connection(
            run.account_id, run.caller_connection_id, self._clock.now()
        )
        if connection is None:
            return "the caller's connection was revoked or expired; the run was not continued"
        principal = connection.principal()
        if RELAYS_RUN not in principal.scopes or not principal.may_target(relay_target(run.relay)):
            return f"the caller may no longer run relay:{run.relay}"
        return None

    def _record(self, run: RelayRun, version: int, outcome: dict[str, Any]) -> dict[str, Any]:
        kind = outcome.get("outcome")
        if kind == "succeeded":
            text = json.dumps(outcome.get("result"), separators=(",", ":"))
            if len(text.encode()) <= limits.RELAY_RESULT_MAX_BYTES:
                self._end(run, version, "succeeded", result_json=text)
                count("RelayRunsSucceeded")
                return {"status": "succeeded"}
            outcome = {
                "outcome": "failed",
                "error": f"the result is over {limits.RELAY_RESULT_MAX_BYTES // 1024} KiB as "
                "JSON; return a reference to large data instead",
                "final": True,
            }
        if kind == "needs_reconciliation":
            evidence = outcome.get("evidence") or {}
            self._end(
                run,
                version,
                "needs_reconciliation",
                error=f"step '{evidence.get('step')}' is uncertain and not safe to replay",
                evidence=evidence,
            )
            count("RelayRunsNeedReconciliation")
            return {"status": "needs_reconciliation"}
        error = str(outcome.get("error") or "the relay code failed")[:2000]
        if run.execution_attempts < limits.RELAY_ATTEMPTS_MAX and not outcome.get("final"):
            self._runs.replace(
                replace(
                    run, status="retrying", error=error, credential_hash="", updated_at=self._now()
                ),
                version,
            )
            logger.info("relay attempt failed; retrying", extra={"error": error})
            raise RelayAttemptFailed(error)
        self._end(run, version, "failed", error=error)
        count("RelayRunsFailed")
        return {"status": "failed"}

    def record_failure(self, run_id: str, execution: str, failure: Any) -> dict[str, Any]:
        """The Catch of the state machine: the attempt itself crashed or timed out."""
        found = self._runs.get(run_id)
        if found is None:
            return {"status": "missing"}
        run, version = found
        if run.terminal or run.execution != execution:
            return {"status": run.status}
        cause = failure.get("Cause") if isinstance(failure, dict) else None
        message = run.error or "the relay code function failed"
        if isinstance(cause, str) and cause:
            try:
                message = str(json.loads(cause).get("errorMessage") or message)
            except (ValueError, AttributeError):
                message = cause
        self._end(run, version, "failed", entered=2, error=message[:2000])
        count("RelayRunsFailed")
        return {"status": "failed"}

    def _end(
        self, run: RelayRun, version: int, status: RunStatus, entered: int = 1, **fields: Any
    ) -> None:
        """`entered`: the states this execution entered (Attempt, and RecordFailure when the
        attempt crashed), counted to the account's usage with the run's end."""
        ended = replace(
            run, status=status, credential_hash="", updated_at=self._now(), **fields
        )  # the credential dies with the attempt
        self._runs.replace(ended, version, usage=relay_usage(entered))

    def _now(self) -> int:
        return int(self._clock.now() * 1000)


def lambda_launcher(function_name: str, client: Callable[[], Any]) -> Launch:
    """Invokes the relay code function and waits for its outcome."""

    def launch(event: dict[str, Any]) -> dict[str, Any]:
        response = client().invoke(
            FunctionName=function_name,
            InvocationType="RequestResponse",
            Payload=json.dumps(event).encode(),
        )
        payload = response["Payload"].read()
        try:
            body = json.loads(payload) if payload else {}
        except ValueError:
            body = {}
        if response.get("FunctionError"):
            message = body.get("errorMessage") if isinstance(body, dict) else None
            return {"outcome": "failed", "error": f"the relay code function failed: {message}"}
        return body if isinstance(body, dict) else {"outcome": "failed", "error": "no outcome"}

    return launch
