"""A run's webhooks to its `notifyUrl` (W3): on an escalation and on completion, signed
with the account's webhook key (every listed key while the signing secret rotates), each
delivery recorded on the run (the latest `limits.WORKFLOW_NOTIFICATIONS_KEPT`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.workflows.run_store import StaleRecord
from agentworks.workflows.webhooks import WEBHOOK_PURPOSE

if TYPE_CHECKING:
    from agentworks.signing import Signer
    from agentworks.workflows.records import RunRecord
    from agentworks.workflows.run_store import RunStore
    from agentworks.workflows.webhooks import Webhooks


class RunNotices:
    def __init__(self, runs: RunStore, signer: Signer | None, webhooks: Webhooks) -> None:
        self._runs = runs
        self._signer = signer  # None in the tick, which sends none
        self._webhooks = webhooks

    def send(self, run: RunRecord, event: str, payload: dict[str, Any]) -> None:
        url = run.definition.get("notifyUrl")
        if not url or self._signer is None:
            return
        keys = self._signer.derived_keys(WEBHOOK_PURPOSE, run.account_id)  # >1 mid-rotation
        body = {"runId": run.run_id, "workflowId": run.workflow_id, **payload}
        note = self._webhooks.send(url, keys, event, body)
        for _ in range(3):  # the run item is shared with cancel and finish: re-read on a race
            found = self._runs.get(run.run_id)
            if found is None:
                return
            current, version, _ = found
            # The latest few: a run with many escalations keeps one item's worth.
            current.notifications = [*current.notifications, note][
                -limits.WORKFLOW_NOTIFICATIONS_KEPT :
            ]
            try:
                self._runs.save(current, version, status_changed=False)
                return
            except StaleRecord:
                continue
