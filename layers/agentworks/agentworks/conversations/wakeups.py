"""Wakeups (M9): another turn of a Crew in one exact conversation, at a time or after a delay.

Scheduling, cancelling and rescheduling are authorized like a send into that inbox (same
account, the caller holds its side, and the Crew's switch is not off — cancelling needs no
switch). The one-minute tick fires due wakeups: `scheduled → firing` under a condition (one
tick wins), the run is stored and started, then `fired`. If starting fails after `firing`,
or the tick stops before it records the outcome, the wakeup is recorded `interrupted` and
never fired again. Replies don't cancel wakeups. An account's scheduler pause makes the
tick leave its wakeups scheduled, out of its sight, until it is lifted; one account's
backlog never holds up another's (fair shares within the tick's cap).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.crew_inbox_store import CrewInboxStore, Wakeup, parse_wakeup_id
from agentworks.conversations.crew_messages import wakeup_view
from agentworks.conversations.message_runs import NOT_STARTED, MessageRuns
from agentworks.conversations.models import RescheduleWakeup, ScheduleWakeup, WakeupView
from agentworks.errors import Conflict, InvalidInput, TryAgain, Unavailable
from agentworks.identity.models import MESSAGES_SEND, Principal
from agentworks.ids import new_id, new_ulid, parse_inbox_id

if TYPE_CHECKING:
    from agentworks.messaging.crew_gate import CrewTarget
    from agentworks.messaging.service import MessagingService

STOPPED = "The tick stopped while starting this wakeup; it is not fired again."


class Wakeups:
    def __init__(
        self,
        inbox: CrewInboxStore,
        runs: MessageRuns,
        messaging: MessagingService | None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._inbox = inbox
        self._runs = runs
        self._messaging = messaging
        self._clock = clock
        self._queue = inbox.queue

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def _authorize(
        self, principal: Principal, inbox_id: str, agent_name: str | None, admit_crew: bool
    ) -> CrewTarget | None:
        if self._messaging is None:
            raise Unavailable()
        return self._messaging.authorize_send(principal, inbox_id, agent_name, admit_crew)

    # ---- schedule, cancel, reschedule ----

    def schedule(self, principal: Principal, request: ScheduleWakeup) -> WakeupView:
        principal.require(MESSAGES_SEND)
        due_at = self._due(request.at, request.delay_seconds)
        crew = self._authorize(principal, request.inbox_id, request.agent_name, True)
        inbox = parse_inbox_id(request.inbox_id)
        if crew is None:
            raise InvalidInput(
                "Wakeups are for conversations with a Crew: give your inbox_id of a "
                "conversation started with target=crew:NAME.",
                field="inbox_id",
            )
        now = self._now()
        wake = new_ulid(self._clock)
        wakeup = Wakeup(
            wakeup_id=f"wku_{inbox.conversation}{wake}",
            conversation=inbox.conversation,
            wake=wake,
            account_id=principal.account_id,
            crew_id=crew.crew_id,
            crew_name=crew.name,
            inbox_id=inbox.inbox_id,
            crew_inbox_id=inbox.peer.inbox_id,
            agent_name=request.agent_name.lower() if request.agent_name else None,
            connection_id=principal.connection_id,
            due_at=due_at,
            state="scheduled",
            created_at=now,
            updated_at=now,
        )
        self._inbox.put_wakeup(wakeup)
        return wakeup_view(wakeup)

    def cancel(self, principal: Principal, wakeup_id: str) -> WakeupView:
        wakeup = self._mine(principal, wakeup_id, admit_crew=False)
        if not self._inbox.cancel(wakeup, self._now()):
            raise self._not_scheduled(wakeup_id)
        return wakeup_view(self._reload(wakeup))

    def reschedule(
        self, principal: Principal, wakeup_id: str, request: RescheduleWakeup
    ) -> WakeupView:
        due_at = self._due(request.at, request.delay_seconds)
        wakeup = self._mine(principal, wakeup_id, admit_crew=True)
        if not self._inbox.reschedule(wakeup, due_at, self._now()):
            raise self._not_scheduled(wakeup_id)
        return wakeup_view(self._reload(wakeup))

    def _mine(self, principal: Principal, wakeup_id: str, admit_crew: bool) -> Wakeup:
        principal.require(MESSAGES_SEND)
        conversation, wake = parse_wakeup_id(wakeup_id)
        wakeup = self._live(self._inbox.get_wakeup(conversation, wake))
        if wakeup is None or wakeup.account_id != principal.account_id:
            raise Unavailable()
        self._authorize(principal, wakeup.inbox_id, wakeup.agent_name, admit_crew)
        return wakeup

    def _reload(self, wakeup: Wakeup) -> Wakeup:
        return self._live(self._inbox.get_wakeup(wakeup.conversation, wakeup.wake)) or wakeup

    def _live(self, wakeup: Wakeup | None) -> Wakeup | None:
        """A wakeup past its TTL is gone, though DynamoDB may hold it for up to ~48 h."""
        return None if wakeup is None or wakeup.is_expired(self._now()) else wakeup

    def _not_scheduled(self, wakeup_id: str) -> Conflict:
        conversation, wake = parse_wakeup_id(wakeup_id)
        current = self._live(self._inbox.get_wakeup(conversation, wake))
        state = current.state if current else "gone"
        return Conflict(
            f"The wakeup is {state}, no longer scheduled; schedule a new one.", state=state
        )

    def _due(self, at: str | None, delay_seconds: int | None) -> int:
        """The due time in ms, 60 s to 7 days from now (M9)."""
        if (at is None) == (delay_seconds is None):
            raise InvalidInput(
                "Give exactly one of at (an ISO 8601 time) or delay_seconds.", field="at"
            )
        now = self._clock.now()
        if delay_seconds is not None:
            seconds = float(delay_seconds)
            field = "delay_seconds"
        else:
            assert at is not None
            try:
                moment = datetime.fromisoformat(at.strip())
            except ValueError:
                raise InvalidInput(
                    "at must be an ISO 8601 time, e.g. 2030-01-31T09:00:00Z.", field="at"
                ) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            seconds = moment.timestamp() - now
            field = "at"
        if not limits.WAKEUP_MIN_SECONDS <= seconds <= limits.WAKEUP_MAX_SECONDS:
            raise InvalidInput(
                f"A wakeup is due {limits.WAKEUP_MIN_SECONDS} s to 7 days "
                f"({limits.WAKEUP_MAX_SECONDS:,} s) from now; this one would be "
                f"{seconds:,.0f} s away.",
                field=field,
            )
        return int((now + seconds) * 1000)

    # ---- the scheduler pause (per account) ----

    def scheduler(self, principal: Principal) -> dict[str, Any]:
        principal.require_account_admin()
        return {"paused": self._queue.paused(principal.account_id)}

    def set_paused(self, principal: Principal, paused: bool) -> dict[str, Any]:
        principal.require_account_admin()
        self._queue.set_paused(principal.account_id, paused, principal.connection_id, self._now())
        return {"paused": paused}

    # ---- the tick ----

    def fire_due(self) -> dict[str, int]:
        """Fires due wakeups once (the one-minute tick); records the interrupted ones.

        At most WAKEUPS_PER_TICK are claimed, shared out in rounds among the accounts that
        have some due: each round gives every account still holding due wakeups an equal
        part of what is left, so an account with a backlog takes only what the others
        leave. Paused accounts are not in the index the tick reads (wakeup_queue_store)."""
        now = self._now()
        fired = interrupted = 0
        accounts = self._queue.due_accounts(now, limits.WAKEUP_ACCOUNTS_PER_TICK)
        # account → where its next page starts (None: from its oldest)
        waiting: dict[str, dict[str, Any] | None] = dict.fromkeys(accounts)
        budget = limits.WAKEUPS_PER_TICK
        while budget > 0 and waiting:
            share = max(1, budget // len(waiting))
            for account_id in list(waiting):
                if budget <= 0:
                    break
                page, more = self._queue.account_due(
                    account_id, now, min(share, budget), waiting[account_id]
                )
                for conversation, wake in page:
                    budget -= 1
                    outcome = self._claim_and_fire(conversation, wake, now)
                    fired += outcome is True
                    interrupted += outcome is False
                if more is None or not page:
                    del waiting[account_id]
                else:
                    waiting[account_id] = more
        for account_id in accounts:
            self._queue.settle_account(account_id, now)
        stale_before = now - limits.WAKEUP_FIRING_STALE_SECONDS * 1000
        for conversation, wake in self._queue.stale_firing(
            stale_before, limits.WAKEUP_STALE_PER_TICK
        ):
            wakeup = self._inbox.get_wakeup(conversation, wake)
            if wakeup and self._inbox.settle(wakeup, "interrupted", wakeup.run_id, STOPPED, now):
                interrupted += 1
        return {"wakeups_fired": fired, "wakeups_interrupted": interrupted}

    def _claim_and_fire(self, conversation: str, wake: str, now: int) -> bool | None:
        """True: fired; False: interrupted; None: someone else got there first."""
        # The run's id is named on the claim, so the run can report its outcome to the
        # wakeup whatever the order in which the two are recorded.
        run_id = new_id("run", self._clock)
        try:
            wakeup = self._inbox.claim(conversation, wake, now, run_id)
        except TryAgain:
            # Throttled past the retries: it stays scheduled for the next tick, and the
            # other accounts' wakeups still fire in this one.
            return None
        if wakeup is None:
            return None  # another tick, a cancel or a reschedule got there first
        return self._fire(wakeup, now)

    def _fire(self, wakeup: Wakeup, now: int) -> bool:
        assert wakeup.run_id is not None
        try:
            record = self._runs.for_wakeup(wakeup, wakeup.run_id)
        except Exception:
            self._inbox.settle(wakeup, "interrupted", wakeup.run_id, NOT_STARTED, now)
            return False
        if not self._runs.start(record):
            self._inbox.settle(wakeup, "interrupted", record.call_id, NOT_STARTED, now)
            return False
        self._inbox.settle(wakeup, "fired", record.call_id, None, now)
        return True
