"""Opening and closing a listener (the WebSocket API's `$connect` and `$disconnect`).

`$connect` carries the token (`Authorization: Bearer …`, or the web pages' session cookie
from their own Origin) and what to follow (`agent_name`, `inbox_id` or `console=runs` in
the query string). It is checked as a read of the same would be (scope, account,
allow-list, bounds, expiry), so a listener never learns more than its reads would; unknown
and refused look alike. The console's notices name a run of the account that changed and
nothing else (its state is read through the API, which authorizes it): following them needs
a scope that reads runs (`functions:read`, `workflows:run` or `relays:run`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import InvalidInput, LimitReached
from agentworks.identity.models import (
    FUNCTIONS_READ,
    MESSAGES_READ,
    RELAYS_RUN,
    WORKFLOWS_RUN,
    Principal,
)
from agentworks.ids import parse_inbox_id
from agentworks.messaging.access import consent_for
from agentworks.messaging.authority import InboxAuthority
from agentworks.messaging.names import normalize_agent_name
from agentworks.push.listener_store import Listener, ListenerStore
from agentworks.push.subjects import Follow, console, one_inbox, whole_name
from agentworks.usage.counts import Counts

if TYPE_CHECKING:
    from agentworks.usage.recorder import UsageRecorder

CONSOLE_RUNS = "runs"  # `console=runs`: the account's runs (the web pages, C5)


class Listening:
    def __init__(
        self,
        store: ListenerStore,
        authority: InboxAuthority,
        clock: Clock = SYSTEM_CLOCK,
        usage: UsageRecorder | None = None,
    ) -> None:
        self._store = store
        self._authority = authority
        self._clock = clock
        self._usage = usage

    def is_listening(self, agent_id: str) -> bool:
        """A live listener of the name `agent_id` is connected (the directory, issue 10)."""
        partition = whole_name(agent_id).partition
        return bool(self._store.of_partition(partition, self._clock.now(), 1))

    def follow(
        self,
        principal: Principal,
        inbox_id: str | None,
        agent_name: str | None,
        console_of: str | None = None,
    ) -> Follow:
        if console_of is not None:
            return self._console(principal, console_of)
        principal.require(MESSAGES_READ)
        name = normalize_agent_name(agent_name) if agent_name else None
        if inbox_id:
            inbox = parse_inbox_id(inbox_id)
            head, party, _ = self._authority.open(principal, inbox, name)
            self._authority.refuse_expired(head, "This inbox expired after 7 idle days.")
            return one_inbox(inbox.inbox_id, party.agent_id if party.kind == "agent" else None)
        if name:
            consent = consent_for(principal, name, self._authority.fresh_consents)
            return whole_name(consent.agent_id)
        raise InvalidInput(
            "Give agent_name=NAME to follow a name (its mailbox and inboxes), or "
            "inbox_id=ibx_… to follow one conversation.",
            field="agent_name",
        )

    @staticmethod
    def _console(principal: Principal, what: str) -> Follow:
        if what != CONSOLE_RUNS:
            raise InvalidInput(
                f"console={what!r} is not something to follow: console=runs follows the "
                "account's runs.",
                field="console",
            )
        if not {FUNCTIONS_READ, WORKFLOWS_RUN, RELAYS_RUN} & set(principal.scopes):
            principal.require(FUNCTIONS_READ)  # the refusal that names a scope to add
        return console(principal.account_id)

    def connect(
        self,
        principal: Principal,
        ws_id: str,
        inbox_id: str | None,
        agent_name: str | None,
        console_of: str | None = None,
    ) -> Listener:
        follow = self.follow(principal, inbox_id, agent_name, console_of)
        now = self._clock.now()
        # Concurrent connects may each pass this check; the notifier never posts to more
        # than the cap, so a notice's fan-out stays bounded either way.
        cap = limits.PUSH_LISTENERS_PER_SUBJECT
        if len(self._store.of_partition(follow.partition, now, cap)) >= cap:
            raise LimitReached(
                f"{cap} listeners already follow this {_subject(follow)}; stop one of them first.",
                limit=cap,
            )
        lifetime = limits.PUSH_CONNECTION_SECONDS + limits.PUSH_LISTENER_TTL_MARGIN_SECONDS
        expires = int(now) + lifetime
        if principal.session_expires_at is not None:
            # Opened by a web session: it hears nothing once the session has ended.
            expires = min(expires, principal.session_expires_at)
        listener = Listener(
            ws_id, follow, principal.account_id, principal.connection_id, expires, int(now)
        )
        self._store.add(listener)
        return listener

    def disconnect(self, ws_id: str) -> None:
        now = self._clock.now()
        listener = self._store.get(ws_id, now)
        if listener is None or not self._store.remove(listener):
            return  # already removed (by the notifier, which counted its minutes)
        if self._usage is not None:
            # The one write a close adds: its connection time, for its account (usage).
            seconds = Counts(push_seconds=listener.connected_seconds(now))
            self._usage.add(listener.account_id, ws_id, seconds)


def _subject(follow: Follow) -> str:
    if follow.agent_id:
        return "name"
    return "account's runs" if follow.partition.startswith("console:") else "inbox"
