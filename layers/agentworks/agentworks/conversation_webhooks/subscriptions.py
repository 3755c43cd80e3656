"""Webhook subscriptions for conversation events (C6): account admins subscribe a URL to a
subset of the events, list and delete them, and see each delivery's attempts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversation_webhooks.models import (
    CreateWebhook,
    DeletedWebhook,
    WebhookAttempt,
    WebhookDeliveries,
    WebhookDelivery,
    WebhookList,
    WebhookView,
)
from agentworks.conversation_webhooks.subscription_store import (
    DeliveryRecord,
    Subscription,
    SubscriptionStore,
)
from agentworks.errors import Conflict, Unavailable
from agentworks.ids import new_id
from agentworks.messaging.models import iso
from agentworks.outbound.sending import shown
from agentworks.workflows.webhooks import SIGNATURE_HEADER

if TYPE_CHECKING:
    from agentworks.identity.models import Principal


def webhook_view(sub: Subscription) -> WebhookView:
    return WebhookView(
        webhook_id=sub.webhook_id,
        url=sub.url,
        events=sub.events,  # type: ignore[arg-type]
        created_at=iso(sub.created_at) or "",
        created_by=sub.created_by,
    )


def delivery_view(record: DeliveryRecord) -> WebhookDelivery:
    return WebhookDelivery(
        delivery_id=record.entry_key,
        event=record.event,  # type: ignore[arg-type]
        conversation_id=f"cnv_{record.conversation}",
        message_id=record.message_id,
        state=record.state,  # type: ignore[arg-type]
        attempts=[
            WebhookAttempt(at=iso(a.at) or "", status_code=a.status_code, error=shown(a.error))
            for a in record.attempts
        ],
        created_at=iso(record.created_at) or "",
    )


class WebhookSubscriptions:
    def __init__(self, store: SubscriptionStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def create(self, principal: Principal, request: CreateWebhook) -> WebhookView:
        principal.require_account_admin()
        principal.require_own_token()  # it receives the account's events from now on
        sub = Subscription(
            account_id=principal.account_id,
            webhook_id=new_id("whk", self._clock),
            url=request.url,
            events=list(request.events),
            created_at=int(self._clock.now() * 1000),
            created_by=principal.connection_id,
        )
        if not self._store.create(sub):
            raise Conflict(
                f"This account has {limits.CONVERSATION_WEBHOOKS_MAX} webhooks, the most it may "
                "have; delete one first (agentworks webhooks list, DELETE /v1/webhooks/{id}).",
                limit=limits.CONVERSATION_WEBHOOKS_MAX,
            )
        return webhook_view(sub)

    def list(self, principal: Principal) -> WebhookList:
        principal.require_account_admin()
        subs = self._store.of_account(principal.account_id)
        return WebhookList(
            webhooks=[webhook_view(s) for s in subs], signature_header=SIGNATURE_HEADER
        )

    def delete(self, principal: Principal, webhook_id: str) -> DeletedWebhook:
        principal.require_account_admin()
        if not self._store.delete(principal.account_id, webhook_id):
            raise Unavailable()
        return DeletedWebhook(webhook_id=webhook_id)

    def deliveries(self, principal: Principal, webhook_id: str) -> WebhookDeliveries:
        principal.require_account_admin()
        if self._store.get(principal.account_id, webhook_id) is None:
            raise Unavailable()  # another account's id reads as unknown
        records = self._store.deliveries(
            principal.account_id,
            webhook_id,
            limits.CONVERSATION_WEBHOOK_DELIVERIES_SHOWN,
            int(self._clock.now() * 1000),
        )
        return WebhookDeliveries(
            webhook_id=webhook_id, deliveries=[delivery_view(r) for r in records]
        )
