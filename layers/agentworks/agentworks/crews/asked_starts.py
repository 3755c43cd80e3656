"""The tick starts the runs of requests one Crew's run sent another (C3).

The step runner that sends such a request can't start an execution of the state machine
that invokes it (its role would have to name that state machine, which names the step
runner: a dependency cycle), so the request waits `received` in the work table's START
partition and the tick starts its run, at most a minute later. A paused conversation keeps
it until it resumes; a Crew that reviews first holds it for a person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.ids import InboxRef

if TYPE_CHECKING:
    from agentworks.crews.crew_inbox_store import CrewInboxStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.crews.message_runs import MessageRuns
    from agentworks.crews.request_store import RequestStore
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
        started = 0
        now = int(self._clock.now() * 1000)
        for conversation, seq in self._requests.waiting_to_start(limits.ASKED_STARTS_PER_TICK):
            waiting = self._requests.of_message(conversation, seq)
            conv = self._conversations.conversation_as_system(conversation)
            if waiting is None or waiting.state != "received" or conv is None:
                continue
            if conv.status == "paused":
                continue  # resuming starts it
            side, party = next(
                (s, p)
                for s, p in conv.parties.items()
                if p.kind == "crew" and p.agent_id == waiting.crew_id
            )
            crew = self._crews.get(conv.account_id, party.agent_name or "")
            if crew is None or crew.crew_id != waiting.crew_id:
                continue
            if crew.definition.messaging == "review":
                self._inbox.hold_for_review(waiting, now)
                continue
            crew_inbox = InboxRef(conversation, side).inbox_id
            record = self._runs.for_held(waiting, crew.name, crew_inbox, "received")
            started += int(record is not None and record.state != "failed")
        return started
