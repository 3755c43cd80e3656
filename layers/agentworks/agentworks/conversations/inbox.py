"""The Inbox (C5): the conversations a person may see, sorted into the seed's tabs.

You see a conversation when you can see one of its agents (a Crew `visible` to you, a name
you act as) or when it runs as your work (its requests were sent through your connection).
A private Crew counts for its owner only, so an admin does not see a conversation through
it (but may through its other agent). Anyone else's conversations, and unknown ids, look
alike: absent from the list, 404 `unavailable` for one.

Tabs, for the conversations that are not closed:
- **Needs You**: a request waits for a review you may give (you can edit the asked Crew:
  its owner, or an admin unless it is private),
  or one of its runs waits on a question you may answer;
- **Waiting on Others**: it has open requests, none of them being worked on, none for you;
- **Active**: the rest (a run is working, or nothing is open).

Listing reads the account's Crews (one Query), each Crew's newest conversations
(`CONVERSATIONS_SCANNED_PER_CREW`, ByCrew index), and per conversation its META and its
requests (and the record of a run working on one); a conversation with two Crews is listed
once.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.delivery_items import Delivery
from agentworks.conversations.inbox_models import (
    TAB_LABELS,
    TABS,
    ConversationAgent,
    ConversationDetail,
    ConversationList,
    ConversationMessage,
    ConversationSummary,
    PendingQuestion,
    Tab,
)
from agentworks.conversations.models import RequestView
from agentworks.conversations.previews import latest_preview
from agentworks.conversations.requests import request_view
from agentworks.crews.access import editable, may_see_call, visible
from agentworks.crews.models import Crew
from agentworks.errors import AgentWorksError, InvalidInput, Unavailable
from agentworks.identity.models import MESSAGES_READ, MESSAGES_SEND, Principal
from agentworks.ids import InboxRef, MessageRef, other_side, parse_conversation_id
from agentworks.messaging.models import Conversation, iso

if TYPE_CHECKING:
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.conversation_store import ConversationStore

OPEN_STATES = ("waiting_for_review", "received", "in_progress")


class _Seen:
    """What one listing knows: the account's Crews by id, which the principal may see and
    which it may edit (step in for)."""

    def __init__(self, principal: Principal, crews: list[Crew]) -> None:
        self.by_id = {c.crew_id: c for c in crews}
        self.visible: set[str] = set()
        self.editable: set[str] = set()  # C5: it may step in for them (review, answer …)
        for crew in crews:
            try:
                visible(principal, crew)
            except Unavailable:
                continue
            self.visible.add(crew.crew_id)
            with contextlib.suppress(AgentWorksError):  # unavailable, or no admin scope
                editable(principal, crew)
                self.editable.add(crew.crew_id)


class ConversationInbox:
    def __init__(
        self,
        crews: CrewStore,
        conversations: ConversationStore,
        requests: RequestStore,
        calls: CallStore,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._crews = crews
        self._conversations = conversations
        self._requests = requests
        self._calls = calls
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def listing(
        self,
        principal: Principal,
        tab: Tab | None = None,
        agent: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> ConversationList:
        """A page of the conversations `principal` may see, newest first, with the count of
        each tab; `agent` (crew:NAME, agent:NAME or a bare name) keeps that agent's only."""
        principal.require(MESSAGES_READ)
        size = limits.CONVERSATIONS_PAGE_DEFAULT if limit is None else limit
        if not 1 <= size <= limits.CONVERSATIONS_PAGE_MAX:
            raise InvalidInput(f"limit: 1–{limits.CONVERSATIONS_PAGE_MAX}", field="limit")
        before = parse_conversation_id(after) if after else None
        seen = _Seen(principal, self._crews.list_all(principal.account_id))
        ulids: set[str] = set()
        for crew in seen.by_id.values():
            found, _ = self._conversations.crew_conversations(
                principal.account_id, crew.crew_id, None, limits.CONVERSATIONS_SCANNED_PER_CREW
            )
            ulids.update(found)
        counts: dict[str, int] = dict.fromkeys(TABS, 0)
        page: list[ConversationSummary] = []
        more = False
        for ulid in sorted(ulids, reverse=True):
            summary = self._summary(principal, seen, ulid)
            if summary is None or not _has_agent(summary, agent):
                continue
            counts[summary.tab] += 1
            if (before is not None and ulid >= before) or (tab and summary.tab != tab):
                continue
            if len(page) < size:
                page.append(summary)
            else:
                more = True
        return ConversationList(
            conversations=[self._with_latest(summary) for summary in page],
            counts=counts,
            next_cursor=page[-1].conversation_id if more and page else None,
        )

    def show(self, principal: Principal, conversation_id: str) -> ConversationDetail:
        """One conversation with its messages, requests and the questions it waits on."""
        principal.require(MESSAGES_READ)
        ulid = parse_conversation_id(conversation_id)
        seen = _Seen(principal, self._crews.list_all(principal.account_id))
        conv = self._conversations.get_conversation(ulid, self._now_ms())
        if conv is None or conv.account_id != principal.account_id:
            raise Unavailable()
        records = self._requests.of_conversation(ulid, limits.REQUESTS_SHOWN_PER_CONVERSATION)
        summary = self._summarize(principal, seen, conv, records)
        if summary is None:
            raise Unavailable()
        return ConversationDetail(
            **summary.model_dump(),
            messages=self._messages(conv),
            requests=[request_view(r) for r in records],
            questions=self._questions(principal, records),
        )

    # ---- the parts ----

    def _summary(self, principal: Principal, seen: _Seen, ulid: str) -> ConversationSummary | None:
        conv = self._conversations.get_conversation(ulid, self._now_ms())
        if conv is None or conv.account_id != principal.account_id:
            return None
        records = self._requests.of_conversation(ulid, limits.REQUESTS_SHOWN_PER_CONVERSATION)
        return self._summarize(principal, seen, conv, records)

    def _summarize(
        self, principal: Principal, seen: _Seen, conv: Conversation, records: list[Delivery]
    ) -> ConversationSummary | None:
        runs_as_you = any(r.connection_id == principal.connection_id for r in records)
        agents = [self._agent(principal, seen, conv, side) for side in ("a", "b")]
        sees_an_agent = any(
            (p.kind == "crew" and p.agent_id in seen.visible)
            or (p.kind == "agent" and (p.agent_name or "") in principal.acting_as)
            for p in conv.parties.values()
        )
        if not (sees_an_agent or runs_as_you):
            return None
        views = [request_view(r) for r in records]
        open_requests = [v for v in views if v.state in OPEN_STATES]
        asked = next((a for a in agents if a.side == "b"), None)
        reviews = sum(
            v.state == "waiting_for_review" for v in open_requests if asked and asked.may_act
        )
        questions = len(self._questions(principal, records))
        needs_you = reviews + questions
        tab = _tab(conv.status, open_requests, needs_you)
        return ConversationSummary(
            conversation_id=f"cnv_{conv.conversation}",
            status=conv.status,
            tab=tab,
            tab_label=TAB_LABELS[tab],
            agents=agents,
            open_requests=open_requests,
            runs=[v for v in views if v.run_id],
            needs_you=needs_you,
            runs_as_you=runs_as_you,
            created_at=iso(conv.created_at) or "",
            last_activity_at=iso(conv.last_activity) or "",
        )

    def _with_latest(self, summary: ConversationSummary) -> ConversationSummary:
        """The summary with its newest message's first line (`latest_preview`)."""
        ulid = parse_conversation_id(summary.conversation_id)
        preview = latest_preview(self._conversations, ulid, self._now_ms())
        if preview is None:
            return summary
        return summary.model_copy(update={"latest": preview})

    def _agent(
        self, principal: Principal, seen: _Seen, conv: Conversation, side: str
    ) -> ConversationAgent:
        party = conv.parties[side]  # type: ignore[index]
        if party.kind == "crew":
            crew = seen.by_id.get(party.agent_id or "")
            may_act = crew is not None and crew.crew_id in seen.editable
            address = f"crew:{crew.name}" if crew else party.address
        elif party.kind == "agent":
            may_act = (party.agent_name or "") in principal.acting_as
            address = party.address
        else:  # the account's external client: any connection of it may send there
            may_act = MESSAGES_SEND in principal.scopes
            address = party.address
        return ConversationAgent(
            side=side,  # type: ignore[arg-type]
            address=address,
            inbox_id=InboxRef(conv.conversation, side).inbox_id,  # type: ignore[arg-type]
            may_act=may_act,
        )

    def _questions(self, principal: Principal, records: list[Delivery]) -> list[PendingQuestion]:
        """Questions runs of these requests wait on, whose calls `principal` may answer."""
        found: list[PendingQuestion] = []
        for record in records:
            if record.state != "running" or not record.run_id:
                continue
            stored = self._calls.get(record.run_id)
            if stored is None:
                continue
            try:
                call = may_see_call(principal, stored[0])
            except Unavailable:
                continue
            answered = {a.get("request_id") for a in call.answers}
            found += [
                PendingQuestion(run_id=call.call_id, request_id=p.request_id, question=p.question)
                for p in call.pending_inputs
                if p.request_id not in answered
            ]
        return found

    def _messages(self, conv: Conversation) -> list[ConversationMessage]:
        head = self._conversations.head(conv.conversation, self._now_ms())
        if head.latest is None:
            return []
        newest = head.latest.seq + 1
        shown = limits.CONVERSATION_MESSAGES_SHOWN
        stored = [
            m
            for side in ("a", "b")
            for m in self._conversations.received_before(conv.conversation, side, newest, shown)
        ]
        stored.sort(key=lambda m: m.seq)
        now = self._now_ms()
        return [
            ConversationMessage(
                message_id=MessageRef(m.conversation, m.side, m.seq).message_id,
                sender=m.sender,
                to=conv.parties[m.side].address,
                kind=m.framing.kind,
                body=m.body,
                created_at=iso(m.created_at) or "",
                deadline_at=iso(m.framing.deadline_at),
                in_reply_to=(
                    MessageRef(m.conversation, other_side(m.side), m.framing.in_reply_to).message_id
                    if m.framing.in_reply_to is not None
                    else None
                ),
                handoff=m.framing.handoff,
            )
            for m in stored[-shown:]
            if m.is_live(now)
        ]


def _tab(status: str, open_requests: list[RequestView], needs_you: int) -> Tab:
    if status == "closed":
        return "closed"
    if needs_you:
        return "needs_you"
    if open_requests and not any(r.state == "in_progress" for r in open_requests):
        return "waiting_on_others"
    return "active"


def _has_agent(summary: ConversationSummary, agent: str | None) -> bool:
    if not agent:
        return True
    wanted = agent.strip().lower()
    return any(
        a.address.lower() == wanted or a.address.lower().partition(":")[2] == wanted
        for a in summary.agents
    )
