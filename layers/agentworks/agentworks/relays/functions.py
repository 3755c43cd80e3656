"""Relay functions on the shared `functions` surface (issue 9, "From workflows"):
`target=relay:NAME` lists and calls a published Relay's functions like a Crew's.

A call is a run of the active release: its `call_id` is the run id, its arguments the
run's input, its `submission_id` the idempotency key (a workflow step's is derived from
its run, step and arguments, so an identical call in that scope reuses its run). The
caller is the connection, or `workflow:<id>` with the authority of that run's starter.
"""

from __future__ import annotations

import json
from typing import Any

from agentworks.crews.models import CallFunction
from agentworks.identity.models import FUNCTIONS_CALL, FUNCTIONS_READ, Principal
from agentworks.relays.releases import RelayReleases
from agentworks.relays.runs import RelayRuns
from agentworks.relays.views import RelayRunView, StartRelayRun

_STATE = {
    "queued": "accepted",
    "running": "running",
    "retrying": "running",
    "succeeded": "succeeded",
    "failed": "failed",
    "needs_reconciliation": "failed",
}


def relay_name(target: str) -> str:
    kind, _, name = target.strip().partition(":")
    return name if kind == "relay" else ""


class RelayFunctions:
    def __init__(self, releases: RelayReleases, runs: RelayRuns) -> None:
        self._releases = releases
        self._runs = runs

    def list_functions(
        self, principal: Principal, target: str, caller: str | None = None
    ) -> dict[str, Any]:
        principal.require(FUNCTIONS_READ)
        name = relay_name(target)
        release = self._releases.pinned(principal, name, None)
        return {
            "target": f"relay:{name}",
            "version": release.version,
            "functions": [
                {
                    "name": f.name,
                    "description": f.description,
                    "input_schema": f.input_schema,
                    "output_schema": None,
                }
                for f in release.functions
            ],
        }

    def call(
        self, principal: Principal, request: CallFunction, caller: str | None = None
    ) -> dict[str, Any]:
        principal.require(FUNCTIONS_CALL)
        key = request.submission_id or _derived_key(request)
        started = self._runs.start(
            principal,
            relay_name(request.target),
            StartRelayRun(
                function=request.function, input=request.args, idempotency_key=key, version=None
            ),
            caller,
        )
        return {**call_view(started), "replayed": started.replayed}

    def status(self, principal: Principal, call_id: str) -> dict[str, Any]:
        principal.require(FUNCTIONS_READ)
        return call_view(self._runs.status(principal, call_id))


def _derived_key(request: CallFunction) -> str:
    """Without a submission id each call is new work: a key no retry will repeat."""
    import secrets

    return f"call-{secrets.token_hex(16)}"


def call_view(run: RelayRunView) -> dict[str, Any]:
    """A Relay run as a CallView: its outcome, its durable steps as progress."""
    progress = [f"run {run.run_id} (release {run.version}): {run.status}"] + [
        f"step {s.name}: {s.status}" for s in run.steps
    ]
    return {
        "call_id": run.run_id,
        "target": f"relay:{run.relay}",
        "function": run.function,
        "state": _STATE[run.status],
        "terminal": run.terminal,
        "progress": progress,
        "errors": [run.error] if run.error and run.terminal else [],
        "pending_inputs": [],
        "final_text": json.dumps(run.result) if run.status == "succeeded" else None,
        "result": run.result,
        "result_file": None,
        "files": [],
        "turns": run.attempts,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
    }
