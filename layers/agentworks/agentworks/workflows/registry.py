"""Registered workflows and their triggers (W11): a WORKFLOW.md registered under its
workflowId; its webhook triggers start runs from signed requests, its schedules from the
tick. A triggered run has the rights of the connection that registered the workflow, as of
the moment it starts (a revoked registrant starts nothing).

Registering is account administration (an admin within bounds that include
`workflow:<workflowId>`); re-registering keeps the id and secret of a trigger of the same
name and kind, so a configured webhook sender goes on working.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.dynamo import TransactionCancelled
from agentworks.errors import Conflict, InvalidInput, TryAgain, Unauthenticated, Unavailable
from agentworks.identity.models import WORKFLOWS_RUN, Principal
from agentworks.ids import new_id
from agentworks.messaging.models import iso
from agentworks.workflows.registry_store import (
    RegisteredWorkflow,
    RegistryStore,
    StaleRegistration,
    TriggerRecord,
)
from agentworks.workflows.registry_views import (
    RegisteredWorkflowDeleted,
    RegisteredWorkflowList,
    RegisteredWorkflowSummary,
    RegisteredWorkflowView,
    TriggerRun,
    TriggerView,
)
from agentworks.workflows.triggers import (
    FunctionTrigger,
    ScheduleTrigger,
    WebhookTrigger,
    next_fire,
    parse_triggers,
)
from agentworks.workflows.views import RunStarted
from agentworks.workflows.webhooks import SIGNATURE_HEADER, verified
from agentworks.workflows.workflow_file import parse_workflow_file

if TYPE_CHECKING:
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.workflows.runs import WorkflowRuns
    from agentworks.workflows.schedules import EventBridgeSchedules

GITHUB_HEADER = "X-Hub-Signature-256"
# A bad signature, an unknown trigger and a removed one answer alike.
_REFUSED = "The webhook's signature does not match a trigger of this deployment."


@dataclass(frozen=True)
class _Delivery:
    signature: str  # hex HMAC the sender made: the same only for the same signed request
    expires_at: int  # epoch s: when a replay of it would be refused anyway


def _lookup(payload: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(payload, dict) or part not in payload:
            return None
        payload = payload[part]
    return payload


class WorkflowRegistry:
    def __init__(
        self,
        store: RegistryStore,
        runs: WorkflowRuns,
        connections: ConnectionStore,
        clock: Clock = SYSTEM_CLOCK,
        schedules: EventBridgeSchedules | None = None,
    ) -> None:
        self._store = store
        self._schedules = schedules
        self._runs = runs
        self._connections = connections
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    # ---- registering ----

    def register(self, principal: Principal, content: str) -> RegisteredWorkflowView:
        principal.require_account_admin()
        principal.require_own_token()  # its triggers and schedules start runs as the caller
        read = parse_workflow_file(content)
        start = read.start
        triggers = parse_triggers(read.triggers)
        self._runs.check_steps(principal, start)
        definition = {k: v for k, v in start.to_json().items() if k != "input"}
        existing = self._store.get(principal.account_id, start.workflow_id)
        kept: dict[tuple[str, str], TriggerRecord] = {}
        for trigger_id in existing.trigger_ids if existing else []:
            old = self._store.trigger(trigger_id)
            if old is not None:
                kept[(old.kind, old.name)] = old
        now = self._now()
        records: list[TriggerRecord] = []
        shown_secrets: dict[str, str] = {}
        for trigger in triggers:
            previous = kept.pop((trigger.kind, trigger.name), None)
            record = TriggerRecord(
                trigger_id=previous.trigger_id if previous else new_id("trg", self._clock),
                account_id=principal.account_id,
                workflow_id=start.workflow_id,
                kind=trigger.kind,
                name=trigger.name,
                config=trigger.model_dump(mode="json"),
                registered_by=principal.connection_id,
            )
            if isinstance(trigger, FunctionTrigger):
                record.config = trigger.model_dump(mode="json", by_alias=True)
            elif isinstance(trigger, WebhookTrigger):
                secret = previous.secret if previous and previous.secret else None
                record.secret = secret or secrets.token_urlsafe(32)
                if secret is None:
                    shown_secrets[record.trigger_id] = record.secret
            elif isinstance(trigger, ScheduleTrigger):
                record.next_due = self._next_due(trigger, now)
            records.append(record)
        registered = RegisteredWorkflow(
            account_id=principal.account_id,
            workflow_id=start.workflow_id,
            definition=definition,
            registered_by=principal.connection_id,
            version=(existing.version + 1) if existing else 1,
            created_at=existing.created_at if existing else now,
            updated_at=now,
            trigger_ids=[r.trigger_id for r in records],
        )
        try:
            self._store.put(registered)
        except StaleRegistration:
            raise Conflict("The workflow was registered again meanwhile; retry.") from None
        for record in records:
            self._store.put_trigger(record)
            if record.kind == "schedule" and self._schedules is not None:
                self._schedules.put(record.trigger_id, str(record.config["schedule"]))
        for gone in kept.values():
            self._forget(gone)
        return self._view(registered, records, shown_secrets)

    def _forget(self, trigger: TriggerRecord) -> None:
        if trigger.kind == "schedule" and self._schedules is not None:
            self._schedules.delete(trigger.trigger_id)
        self._store.delete_trigger(trigger.trigger_id)

    def _next_due(self, trigger: ScheduleTrigger, now_ms: int) -> int:
        after = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
        return int(next_fire(trigger.schedule, after).timestamp() * 1000)

    def _found(self, principal: Principal, workflow_id: str) -> RegisteredWorkflow:
        principal.require(WORKFLOWS_RUN)
        found = self._store.get(principal.account_id, workflow_id)
        if found is None or not principal.may_target(f"workflow:{workflow_id}"):
            raise Unavailable()
        return found

    def get(self, principal: Principal, workflow_id: str) -> RegisteredWorkflowView:
        found = self._found(principal, workflow_id)
        triggers = [t for t in map(self._store.trigger, found.trigger_ids) if t is not None]
        return self._view(found, triggers, {})

    def list(self, principal: Principal) -> RegisteredWorkflowList:
        principal.require(WORKFLOWS_RUN)
        found = [
            w
            for w in self._store.list_all(principal.account_id)
            if principal.may_target(f"workflow:{w.workflow_id}")
        ]
        return RegisteredWorkflowList(
            workflows=[
                RegisteredWorkflowSummary(
                    workflow_id=w.workflow_id,
                    version=w.version,
                    triggers=len(w.trigger_ids),
                    updated_at=iso(w.updated_at),
                )
                for w in sorted(found, key=lambda w: w.workflow_id)
            ]
        )

    def delete(self, principal: Principal, workflow_id: str) -> RegisteredWorkflowDeleted:
        principal.require_account_admin()
        found = self._found(principal, workflow_id)
        for trigger in map(self._store.trigger, found.trigger_ids):
            if trigger is not None:
                self._forget(trigger)
        self._store.delete(found)
        return RegisteredWorkflowDeleted(workflow_id=workflow_id, deleted=True)

    def _view(
        self,
        workflow: RegisteredWorkflow,
        triggers: Sequence[TriggerRecord],
        shown_secrets: dict[str, str],
    ) -> RegisteredWorkflowView:
        return RegisteredWorkflowView(
            workflow_id=workflow.workflow_id,
            version=workflow.version,
            definition=workflow.definition,
            updated_at=iso(workflow.updated_at),
            triggers=[
                TriggerView(
                    trigger_id=t.trigger_id,
                    kind=t.kind,
                    name=t.name,
                    config=t.config,
                    path=f"/v1/hooks/{t.trigger_id}" if t.kind == "webhook" else None,
                    # Shown once, when the trigger is made: the sender signs with it.
                    secret=shown_secrets.get(t.trigger_id),
                    next_run_at=iso(t.next_due),
                    runs=[
                        TriggerRun(**r)
                        for r in self._store.history(t.trigger_id, limits.WORKFLOW_TRIGGER_HISTORY)
                    ],
                )
                for t in triggers
            ],
        )

    # ---- firing ----

    def fire_webhook(self, trigger_id: str, headers: dict[str, str], body: bytes) -> RunStarted:
        """W11: a signed request starts a run; anything else starts nothing. A delivery
        starts one run: the same signed request again (a sender's retry, or a replay) while
        its signature is accepted gets the first answer, with the same run id."""
        trigger = self._store.trigger(trigger_id) if trigger_id.startswith("trg_") else None
        delivery = self._signed(trigger, headers, body) if trigger else None
        if trigger is None or trigger.kind != "webhook" or delivery is None:
            raise Unauthenticated(_REFUSED)
        now = int(self._clock.now())
        first = self._store.delivery(trigger_id, delivery.signature, now)
        if first is not None:
            return RunStarted.model_validate(first)
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            raise InvalidInput("The webhook's body is not JSON.") from None
        config = WebhookTrigger.model_validate(trigger.config)
        variables, missing = {}, []
        for name, path in config.variables.items():
            value = _lookup(payload, path)
            if isinstance(value, str | int | float | bool) and str(value).strip():
                variables[name] = value
            else:
                missing.append(f"{path} (for {name})")
        if missing:
            raise InvalidInput(
                "The payload does not carry what the trigger maps: " + ", ".join(missing)
            )
        started: list[str] = []

        def recorded(answer: RunStarted) -> dict[str, dict[str, Any]]:
            started.append(answer.run_id)
            put = self._store.delivery_put(
                trigger_id,
                delivery.signature,
                answer.run_id,
                answer.model_dump(mode="json"),
                delivery.expires_at,
                now,
            )
            return {"delivery": put}

        try:
            return self._start(trigger, variables, recorded)
        except TransactionCancelled as cancelled:
            # The same delivery, at the same moment, got there first: its answer.
            first = self._store.delivery(trigger_id, delivery.signature, now)
            if not cancelled.failed("delivery") or first is None:
                raise
            return RunStarted.model_validate(first)
        except TryAgain:
            # The run was recorded but not started: the sender's retry may start one.
            for run_id in started:
                self._store.forget_delivery(trigger_id, delivery.signature, run_id)
            raise

    def _signed(
        self, trigger: TriggerRecord, headers: dict[str, str], body: bytes
    ) -> _Delivery | None:
        """The delivery a signed request is, or None when its signature does not hold (or
        its time is outside the window)."""
        found = {k.lower(): v for k, v in headers.items()}
        secret = trigger.secret or ""
        now = self._clock.now()
        if trigger.config.get("signature") == "github":
            # GitHub signs the body alone: its delivery is the body's signature (the
            # X-GitHub-Delivery header is not signed, so anyone could change it).
            given = found.get(GITHUB_HEADER.lower(), "")
            digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(given, "sha256=" + digest):
                return None
            return _Delivery(digest, int(now) + limits.WEBHOOK_GITHUB_DELIVERY_SECONDS)
        header = found.get(SIGNATURE_HEADER.lower(), "")
        checked = verified(
            secret,
            header,
            body,
            now,
            limits.WEBHOOK_SIGNATURE_MAX_AGE_SECONDS,
            limits.WEBHOOK_SIGNATURE_MAX_AHEAD_SECONDS,
        )
        if checked is None:
            return None
        signed_at, digest = checked
        # Kept until the signature itself is refused as too old.
        return _Delivery(digest, signed_at + limits.WEBHOOK_SIGNATURE_MAX_AGE_SECONDS + 1)

    def fire_due(self) -> dict[str, int]:
        """The tick's round: every schedule whose time has come starts one run per period."""
        now = self._now()
        due = self._store.due_schedules(now, limits.WORKFLOW_SCHEDULES_PER_TICK)
        return {"schedules_fired": sum(self._fire(trigger_id, now) for trigger_id in due)}

    def fire_one(self, trigger_id: str) -> dict[str, int]:
        """EventBridge Scheduler's invocation for one trigger (its period, if not fired)."""
        now = self._now() + limits.SCHEDULER_EARLY_MS  # it may invoke a little early
        return {"schedules_fired": self._fire(trigger_id, now)}

    def _fire(self, trigger_id: str, now: int) -> int:
        trigger = self._store.trigger(trigger_id)
        if trigger is None or trigger.next_due is None or trigger.next_due > now:
            return 0
        config = ScheduleTrigger.model_validate(trigger.config)
        following = self._next_due(config, max(now, trigger.next_due))
        if not self._store.claim(trigger, trigger.next_due, following):
            return 0  # another invocation fired this period
        try:
            self._start(trigger, dict(config.input))
        except (Conflict, InvalidInput, Unavailable, Unauthenticated) as refused:
            self._store.record_run(trigger_id, f"refused-{trigger.next_due}", now, refused.message)
            return 0
        return 1

    def _start(
        self,
        trigger: TriggerRecord,
        variables: dict[str, Any],
        with_run: Callable[[RunStarted], dict[str, dict[str, Any]]] | None = None,
    ) -> RunStarted:
        registered = self._store.get(trigger.account_id, trigger.workflow_id)
        connection = self._connections.get_live_connection(
            trigger.account_id, trigger.registered_by, self._clock.now()
        )
        if registered is None or connection is None:
            raise Unavailable()
        definition = {**registered.definition, "input": variables}
        started = self._runs.start(connection.principal(), definition, with_run=with_run)
        self._store.record_run(trigger.trigger_id, started.run_id, self._now(), None)
        return started
