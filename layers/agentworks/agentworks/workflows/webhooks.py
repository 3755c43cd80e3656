"""Webhooks to a run's `notifyUrl` (W3): on an escalation and on completion.

Each carries `X-AgentWorks-Signature: t=<unix seconds>,v1=<hex>`, the HMAC-SHA256 of
`"<t>.<body>"` under the account's webhook key (`agentworks workflow webhook-key`), so a
receiver can tell it came from this deployment and is fresh. While the signing secret is
being rotated, one `v1=` per key (the new key's first): a receiver accepts any that matches.
A failing receiver is retried a few times with a doubling pause, then recorded on the run;
it never fails a step or a run. The URL is checked again at each attempt and the request
goes only to the address checked, never following a redirect (agentworks.outbound); the
run records the outcome's category (`HTTP 302`, `connection failed`, …), never the
library's error text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.observability import count
from agentworks.outbound.sending import Outcome, post
from agentworks.workflows.records import Notification

SIGNATURE_HEADER = "X-AgentWorks-Signature"
# The account's webhook key is derived for this purpose (`agentworks workflow webhook-key`);
# workflow and conversation webhooks are both signed with it.
WEBHOOK_PURPOSE = "workflow-webhooks"


def _v1(key: str, timestamp: int, body: bytes) -> str:
    return hmac.new(key.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signature(key: str | list[str], timestamp: int, body: bytes) -> str:
    keys = [key] if isinstance(key, str) else key
    return ",".join([f"t={timestamp}", *(f"v1={_v1(k, timestamp, body)}" for k in keys)])


def verify(
    key: str, header: str, body: bytes, now: float | None = None, max_age: float = 0
) -> bool:
    """What a receiver does (tests, docs and webhook triggers use it): the header matches
    the body — and, given `now`, was signed at most `max_age` seconds from it (replays)."""
    return verified(key, header, body, now, max_age, max_age) is not None


def verified(
    key: str,
    header: str,
    body: bytes,
    now: float | None = None,
    max_age: float = 0,
    max_ahead: float = 0,
) -> tuple[int, str] | None:
    """(signed at, the matching `v1`) when the header matches the body and, given `now`,
    was signed at most `max_age` seconds before it and `max_ahead` after; else None. The
    `v1` names the delivery: it cannot be made for another `t` or body without the key."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    try:
        signed_at = int(next(v for k, v in parts if k == "t"))
    except (StopIteration, ValueError):
        return None
    if now is not None and not (now - max_age <= signed_at <= now + max_ahead):
        return None
    expected = _v1(key, signed_at, body)
    if any(k == "v1" and hmac.compare_digest(expected, v) for k, v in parts):
        return signed_at, expected
    return None


class Webhooks:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock

    def send(
        self, url: str, key: str | list[str], event: str, payload: dict[str, Any]
    ) -> Notification:
        body = json.dumps({"event": event, **payload}, separators=(",", ":")).encode()
        attempts, pause = 0, limits.WEBHOOK_BACKOFF_SECONDS
        while True:
            attempts += 1
            outcome = self._post(url, key, body)
            if outcome.delivered or outcome.final or attempts == limits.WEBHOOK_ATTEMPTS:
                break
            self._clock.sleep(pause)
            pause *= 2
        if not outcome.delivered:
            count("WebhookDeliveriesFailed")  # the operator's alarm; the run records why
        return Notification(
            event=event,
            step=payload.get("step"),
            delivered=outcome.delivered,
            attempts=attempts,
            status_code=outcome.status,
            error=None if outcome.delivered else outcome.describe(),
            at=int(self._clock.now() * 1000),
        )

    def _post(self, url: str, key: str | list[str], body: bytes) -> Outcome:
        return post_signed(url, key, body, int(self._clock.now()), limits.WEBHOOK_TIMEOUT_SECONDS)


def post_signed(
    url: str, key: str | list[str], body: bytes, timestamp: int, timeout: float
) -> Outcome:
    """One signed POST, the URL checked first (agentworks.outbound.sending.post). Workflow
    and conversation webhooks both send with it."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "AgentWorks-Webhooks/1",
        SIGNATURE_HEADER: signature(key, timestamp, body),
    }
    return post(url, body, headers, timeout)
