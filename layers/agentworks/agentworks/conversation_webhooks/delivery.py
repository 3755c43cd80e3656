"""Delivering conversation events (C6): the work table's stream, filtered to new audit
entries, feeds the webhooks function, which sends each entry that is an event to every
subscription of its account that asked for it.

- None for a conversation where either side is a private Crew (or a Crew that is gone:
  its visibility can't be told, so nothing is sent).
- Signed as workflow webhooks are (`X-AgentWorks-Signature: t=…,v1=…`, the account's
  webhook key, one `v1=` per key while the signing secret rotates).
- Tried up to `limits.CONVERSATION_WEBHOOK_ATTEMPTS` times, the pause doubling from
  `CONVERSATION_WEBHOOK_BACKOFF_SECONDS`; a 2xx ends it, and so does a refused URL. Each
  attempt (status or failure category, and when) is recorded on the delivery item, which
  `GET /v1/webhooks/{id}/deliveries` shows.
- The URL is checked again at every attempt, the request goes to the address checked and
  a redirect is not followed (agentworks.outbound).
- Claimed before the first attempt: a retried stream batch sends nothing twice.

Nothing here is on a change's path: the change wrote its audit entry and is done.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.audit.entries import AUDIT_PREFIX, AuditEntry, entry_from
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversation_webhooks.events import event_of, payload
from agentworks.conversation_webhooks.subscription_store import (
    Attempt,
    DeliveryRecord,
    Subscription,
    SubscriptionStore,
)
from agentworks.dynamo import from_item
from agentworks.observability import count
from agentworks.outbound.sending import Outcome
from agentworks.workflows.webhooks import WEBHOOK_PURPOSE, post_signed

if TYPE_CHECKING:
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.signing import Signer

logger = logging.getLogger(__name__)

# The account's one webhook key: the same as workflow webhooks' (`agentworks workflow
# webhook-key`).
ACCOUNT_WEBHOOK_PURPOSE = WEBHOOK_PURPOSE


@dataclass(frozen=True)
class BatchReport:
    entries: int = 0
    sent: int = 0
    failed: int = 0
    skipped_private: int = 0


def audit_entries(records: list[dict[str, Any]]) -> list[AuditEntry]:
    """The new audit entries of a stream batch (the event source's filter passes only
    those; anything else is ignored here too)."""
    found = []
    for record in records:
        if record.get("eventName") != "INSERT":
            continue
        image = from_item((record.get("dynamodb") or {}).get("NewImage")) or {}
        if str(image.get("pk", "")).startswith(AUDIT_PREFIX) and "action" in image:
            found.append(entry_from(image))
    return found


class WebhookDelivery:
    def __init__(
        self,
        subscriptions: SubscriptionStore,
        conversations: ConversationStore,
        crews: CrewStore,
        signer: Signer,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._subs = subscriptions
        self._conversations = conversations
        self._crews = crews
        self._signer = signer
        self._clock = clock

    def deliver(self, entries: list[AuditEntry]) -> BatchReport:
        sent = failed = private = handled = 0
        subscriptions: dict[str, list[Subscription]] = {}  # per account, read once a batch
        # In the order the changes were made (a change's entry can reach the stream after
        # the next one's: a message's is written once its delivery is recorded).
        for entry in sorted(entries, key=lambda e: (e.at, e.entry_id)):
            event = event_of(entry)
            if event is None:
                continue
            if entry.account_id not in subscriptions:
                subscriptions[entry.account_id] = self._subs.of_account(entry.account_id)
            subs = [s for s in subscriptions[entry.account_id] if event in s.events]
            if not subs:
                continue
            handled += 1
            if self._has_private_agent(entry):
                private += 1
                continue
            body = json.dumps(payload(event, entry), separators=(",", ":")).encode()
            keys = self._signer.derived_keys(ACCOUNT_WEBHOOK_PURPOSE, entry.account_id)
            for sub in subs:
                record = DeliveryRecord(
                    account_id=entry.account_id,
                    webhook_id=sub.webhook_id,
                    entry_key=f"{entry.at:013d}#{entry.entry_id}",
                    event=event,
                    conversation=entry.conversation,
                    message_id=entry.message_id,
                    state="sending",
                    created_at=self._now_ms(),
                )
                if not self._subs.claim(record):
                    continue  # a retried batch: this one went (or is going) already
                if self._send(record, sub.url, keys, body):
                    sent += 1
                else:
                    failed += 1
        count("ConversationWebhooksSent", sent)
        count("ConversationWebhooksFailed", failed)
        return BatchReport(handled, sent, failed, private)

    def _has_private_agent(self, entry: AuditEntry) -> bool:
        """C6: none for a conversation with a private agent (a gone Crew counts as one: its
        visibility can't be told)."""
        conv = self._conversations.get_conversation(entry.conversation, self._now_ms())
        if conv is None:
            return True
        for party in conv.parties.values():
            if party.kind != "crew":
                continue
            crew = self._crews.get(conv.account_id, party.agent_name or "")
            if crew is None or crew.crew_id != party.agent_id or crew.is_private:
                return True
        return False

    def _send(self, record: DeliveryRecord, url: str, keys: list[str], body: bytes) -> bool:
        pause = limits.CONVERSATION_WEBHOOK_BACKOFF_SECONDS
        for attempt in range(1, limits.CONVERSATION_WEBHOOK_ATTEMPTS + 1):
            outcome = self._post(url, keys, body)
            # A refused URL stays refused: no more attempts (each would say the same).
            last = outcome.final or attempt == limits.CONVERSATION_WEBHOOK_ATTEMPTS
            state = "delivered" if outcome.delivered else ("failed" if last else "sending")
            error = None if outcome.delivered else outcome.describe()
            self._subs.add_attempt(record, Attempt(self._now_ms(), outcome.status, error), state)
            if outcome.delivered:
                return True
            if last:
                return False
            self._clock.sleep(pause)
            pause *= 2
        return False

    def _post(self, url: str, keys: list[str], body: bytes) -> Outcome:
        # Checked again at each attempt (agentworks.outbound), whatever it was at subscribing.
        return post_signed(
            url, keys, body, int(self._clock.now()), limits.CONVERSATION_WEBHOOK_TIMEOUT_SECONDS
        )

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)
