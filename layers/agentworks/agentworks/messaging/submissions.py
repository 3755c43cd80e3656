"""Submission ids (M2): a send with a `submission_id` stores its message at most once.

The id is claimed first (a pending binding in the conversation table), given back if the
send stored nothing, and names the message once it is stored; a retry replays the receipt,
waits a little for a send still in progress, or takes over one that stopped — finding its
message in the conversation first, so the content is never stored twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from agentworks.clock import ELAPSED_CLOCK, Clock
from agentworks.errors import Conflict
from agentworks.ids import InboxRef, MessageRef, parse_inbox_id
from agentworks.messaging.models import SendReceipt, SubmissionBinding, iso

if TYPE_CHECKING:
    from agentworks.messaging.conversation_store import ConversationStore

# A retry that finds its submission_id held by a send in progress waits for it (real
# time: the other send runs now) ...
_CLAIM_WAIT_S = 3.0
_CLAIM_POLL_S = 0.05
# ... and a claim this old belongs to a send that stopped: it may be taken over.
_STALE_CLAIM_MS = 30_000
# Recovery looks for the stopped send's message from a little before its claim (clocks
# of two functions may differ).
_CLOCK_SKEW_MS = 60_000


def content_hash(destination: str, sender: str, body: str) -> str:
    payload = json.dumps([destination, sender, body], ensure_ascii=False).encode()
    return hashlib.sha256(payload).hexdigest()


@dataclass(frozen=True)
class Stored:
    receipt: SendReceipt
    created_at: int  # ms


@dataclass(frozen=True)
class Submission:
    """What a send with a submission_id is: who sends what where (M2)."""

    account_id: str
    sender: str  # the sending party's address: the binding's namespace
    submission_id: str
    digest: str
    inbox: InboxRef  # the sender's inbox (a planned one for a first contact)


class SubmissionIds:
    def __init__(
        self, conversations: ConversationStore, clock: Clock, waiting: Clock = ELAPSED_CLOCK
    ) -> None:
        self._conversations = conversations
        self._clock = clock
        self._waiting = waiting  # the wait for a send in progress: elapsed real time

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def once(
        self, submission: Submission | None, send: Callable[[str | None], Stored]
    ) -> SendReceipt:
        """Runs `send` at most once per submission id: the id is claimed first (a pending
        binding), given back if nothing was stored, and names the message once it is."""
        if submission is None:
            return send(None).receipt
        claimed = self._claim(submission)
        if isinstance(claimed, SendReceipt):
            return claimed
        try:
            stored = send(submission.submission_id)
        except BaseException:
            with contextlib.suppress(Exception):
                self._conversations.release_binding(claimed)
            raise
        # Best effort: if this is lost, a retry recovers the message from the conversation.
        with contextlib.suppress(ClientError):
            self._conversations.complete_binding(
                claimed, stored.receipt.message_id, stored.created_at
            )
        return stored.receipt

    def _claim(self, submission: Submission) -> SubmissionBinding | SendReceipt:
        """Claims the submission id for this send, or answers as the send that holds it
        did: its receipt (replayed), a conflict on other content, or — while it is still
        running — waits a little for it."""
        give_up = self._waiting.now() + _CLAIM_WAIT_S
        while True:
            now = self._now_ms()
            mine = SubmissionBinding(
                content_hash=submission.digest,
                inbox_id=submission.inbox.inbox_id,
                conversation_id=submission.inbox.conversation_id,
                message_id=None,
                created_at=None,
                claim=uuid.uuid4().hex,
                claimed_at=now,
                sender=submission.sender,
                submission_id=submission.submission_id,
                account_id=submission.account_id,
            )
            held, existing = self._conversations.claim_binding(mine)
            if held:
                return mine
            while existing is not None:
                if existing.content_hash != submission.digest:
                    raise Conflict(
                        "submission_id was already used for a different message; use a new "
                        "submission_id for new content.",
                        field="submission_id",
                    )
                if existing.done:
                    return self._replay(existing)
                if now - existing.claimed_at >= _STALE_CLAIM_MS:
                    if self._conversations.take_over(existing, mine):
                        return self._recover(existing, mine) or mine
                elif self._waiting.now() >= give_up:
                    raise Conflict(
                        "A send with this submission_id is still in progress; retry in a few "
                        "seconds with the same submission_id.",
                        field="submission_id",
                    )
                else:
                    self._waiting.sleep(_CLAIM_POLL_S)
                now = self._now_ms()
                existing = self._conversations.get_binding(
                    submission.account_id, submission.sender, submission.submission_id, now
                )
            if self._waiting.now() >= give_up:
                raise Conflict(
                    "This submission_id is being retried concurrently; retry in a few seconds.",
                    field="submission_id",
                )
            # Given back meanwhile (its send stored nothing): claim it again, after a pause
            # (sends that keep failing and giving it back must not make this one spin).
            self._waiting.sleep(_CLAIM_POLL_S)

    def _recover(self, stale: SubmissionBinding, mine: SubmissionBinding) -> SendReceipt | None:
        """A send that stopped after storing its message but before naming it on the
        binding: find that message, so taking over never stores the content twice."""
        conversation = parse_inbox_id(stale.inbox_id).conversation
        found = self._conversations.find_submission(
            conversation, stale.sender, stale.submission_id, stale.claimed_at - _CLOCK_SKEW_MS
        )
        if found is None:
            return None
        message_id = MessageRef(conversation, found.side, found.seq).message_id
        self._conversations.complete_binding(mine, message_id, found.created_at)
        return self._replay(replace(mine, message_id=message_id, created_at=found.created_at))

    def _replay(self, binding: SubmissionBinding) -> SendReceipt:
        assert binding.message_id is not None
        return SendReceipt(
            inbox_id=binding.inbox_id,
            conversation_id=binding.conversation_id,
            message_id=binding.message_id,
            receipt="stored",
            created_at=iso(binding.created_at) or "",
            replayed=True,
        )
