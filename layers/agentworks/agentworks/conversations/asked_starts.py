"""The runs of requests one Crew's run sent another (C3).

The request waits `received` in the work table's START partition. The step runner that
sent it starts its run at once, on the state machine that invoked it (the AwaitCrew task's
payload names it: the step runner's settings can't, since that machine names the step
runner); the tick starts what is left (a start that failed), at most a minute later. A
paused conversation keeps it until it resumes; a Crew that reviews first holds it for a
person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.ids import InboxRef

if TYPE_CHECKING:
    from agentworks.conversations.crew_inbox_store import CrewInboxStore
    from agentworks.conversations.message_runs import MessageRuns
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.crew_inbox_views import CrewInboxViews


class AskedStarts:
    def __init__(
        self,
        requests: RequestStore,
        inbox: CrewInboxStore,
        runs: MessageRuns,
        crews: CrewStore,
        conversations: CrewInboxViews,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._requests = requests
        self._inbox = inbox
        self._runs = runs
        self._crews = crews
        self._conversations = conversations
        self._clock = clock

    def start_due(self) -> int:
        """Starts (or holds for review) what waits; the runs started."""
        return sum(
            self.start_one(conversation, seq)
            for conversation, seq in self._requests.waiting_to_start(limits.ASKED_STARTS_PER_TICK)
        )

    def start_one(self, conversation: str, seq: int) -> int:
        """The run of one request that waits to start (or its hold for review): 1 when a
        run started. A request no longer waiting (started, declined, paused) is left."""
        now = int(self._clock.now() * 1000)
        waiting = self._requests.of_message(conversation, seq)
        conv = self._conversations.conversation_as_system(conversation)
        if waiting is None or waiting.state != "received" or conv is None:
            return 0
        if conv.status == "paused":
            return 0  # resuming starts it
        side, party = next(
            (s, p)
            for s, p in conv.parties.items()
            if p.kind == "crew" and p.agent_id == waiting.crew_id
        )
        crew = self._crews.get(conv.account_id, party.agent_name or "")
        if crew is None or crew.crew_id != waiting.crew_id:
            return 0
        if crew.definition.messaging == "review":
            self._inbox.hold_for_review(waiting, now)
            return 0
        crew_inbox = InboxRef(conversation, side).inbox_id
        record = self._runs.for_held(waiting, crew.name, crew_inbox, "received")
        return int(record is not None and record.state != "failed")
