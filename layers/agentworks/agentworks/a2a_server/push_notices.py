"""From the work table's stream to A2A push notifications (issue 30 §1; functions/notifier).

A function call whose `state` changed (the stream's OLD and NEW images differ) is read as
its A2A Task, as GetTask shows it, and POSTed to each of the call's push configs: the body
the a2a-sdk's own sender sends (a StreamResponse holding the task, as JSON), with
`X-A2A-Notification-Token` when the config has a token, `Authorization: <scheme>
<credentials>` when it has authentication, and `X-AgentWorks-Signature` as conversation
and workflow webhooks are signed (the account's webhook key), so a receiver verifies all of
them one way.

- Only a state change costs a request: one Query of the call's configs (a write that
  changes no state — progress, a turn's cost — reads nothing).
- Every POST goes through the outbound rules again (agentworks.outbound): https only, every
  address the name resolves to checked, the connection pinned to it, no redirect followed.
- Best effort, as the SDK's sender is: up to A2A_PUSH_ATTEMPTS tries a config, then it is
  logged and counted; a failure never fails the batch (the console's notices share it). A
  batch stops sending after A2A_PUSH_BATCH_SECONDS (what is left is logged).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.call_store import record_of
from agentworks.crews.calls import call_status
from agentworks.crews.models import CallRecord
from agentworks.dynamo import from_item
from agentworks.observability import count
from agentworks.outbound.sending import Outcome, post
from agentworks.push.a2a_config_store import A2aPushConfigStore, PushConfig
from agentworks.workflows.webhooks import SIGNATURE_HEADER, signature

logger = logging.getLogger(__name__)

TOKEN_HEADER = "X-A2A-Notification-Token"  # the SDK sender's name for it
USER_AGENT = "AgentWorks-A2A-Push/1"
Send = Callable[[str, bytes, dict[str, str], float], Outcome]


def _state(image: Mapping[str, Any]) -> str:
    return str((image.get("state") or {}).get("S", ""))


def changed_calls(records: Iterable[Mapping[str, Any]]) -> list[CallRecord]:
    """The function calls whose state a batch of the work table's stream records changed,
    each change in the stream's order (a new call has no configs yet: only MODIFYs)."""
    found = []
    for record in records:
        change = record.get("dynamodb") or {}
        new, old = change.get("NewImage") or {}, change.get("OldImage") or {}
        keys = from_item(change.get("Keys")) or {}
        if record.get("eventName") != "MODIFY" or keys.get("sk") != "META":
            continue
        if not str(keys["pk"]).startswith("CALL#") or _state(new) == _state(old):
            continue
        call = record_of(from_item(new) or {})
        if call.kind == "function":  # a Crew's run for a message is no task of anyone's
            found.append(call)
    return found


def notification(call: CallRecord) -> bytes:
    """The a2a-sdk sender's body: StreamResponse{task}, as MessageToDict writes it."""
    # The SDK loads only when a call with configs changed (the notifier's other work
    # never needs it).
    from a2a.utils.proto_utils import to_stream_response
    from google.protobuf.json_format import MessageToDict

    from agentworks.a2a_server.call_tasks import call_task

    body = MessageToDict(to_stream_response(call_task(call_status(call))))
    return json.dumps(body, separators=(",", ":")).encode()


def headers(config: PushConfig, keys: list[str], body: bytes, timestamp: int) -> dict[str, str]:
    sent = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: signature(keys, timestamp, body),
    }
    if config.token:
        sent[TOKEN_HEADER] = config.token
    if config.auth_scheme and config.auth_credentials:
        sent["Authorization"] = f"{config.auth_scheme} {config.auth_credentials}"
    return sent


def a2a_notices() -> A2aNotices:
    """The notifier's, from the push parts runtime builds."""
    from agentworks.runtime import push

    parts = push()
    return A2aNotices(parts.a2a_configs, parts.webhook_keys)


class A2aNotices:
    def __init__(
        self,
        configs: A2aPushConfigStore,
        webhook_keys: Callable[[str], list[str]],
        clock: Clock = SYSTEM_CLOCK,
        send: Send = post,
    ) -> None:
        self._configs = configs
        self._keys = webhook_keys
        self._clock = clock
        self._send = send

    def notify(self, changed: Iterable[CallRecord]) -> int:
        """Sends each change to its call's configs; how many POSTs were answered 2xx."""
        deadline = self._clock.now() + limits.A2A_PUSH_BATCH_SECONDS
        configs: dict[str, list[PushConfig]] = {}  # per call, read once a batch
        sent = failed = 0
        for call in changed:
            try:
                if call.call_id not in configs:
                    configs[call.call_id] = self._configs.of_call(call.call_id, consistent=False)
                if not configs[call.call_id]:
                    continue
                body = notification(call)
                keys = self._keys(call.account_id)
            except Exception:
                logger.exception("A2A push: could not prepare %s's notification", call.call_id)
                failed += 1
                continue
            for config in configs[call.call_id]:
                if self._clock.now() >= deadline:
                    logger.warning("A2A push: batch out of time, %s not sent", call.call_id)
                    failed += 1
                elif self._deliver(config, keys, body):
                    sent += 1
                else:
                    failed += 1
        count("A2aPushSent", sent)
        count("A2aPushFailed", failed)
        return sent

    def _deliver(self, config: PushConfig, keys: list[str], body: bytes) -> bool:
        pause = limits.A2A_PUSH_BACKOFF_SECONDS
        for attempt in range(1, limits.A2A_PUSH_ATTEMPTS + 1):
            try:
                sent = headers(config, keys, body, int(self._clock.now()))
                outcome = self._send(config.url, body, sent, limits.A2A_PUSH_TIMEOUT_SECONDS)
            except Exception:
                logger.exception("A2A push to config %s failed", config.config_id)
                return False
            if outcome.delivered:
                return True
            # The category only (sending.py): never the library's words about the network.
            logger.warning(
                "A2A push to config %s of %s: %s (attempt %d)",
                config.config_id,
                config.call_id,
                outcome.describe(),
                attempt,
            )
            if outcome.final:
                return False
            if attempt < limits.A2A_PUSH_ATTEMPTS:
                self._clock.sleep(pause)
                pause *= 2
        return False
