"""M2: how a send claims its submission_id when another holds it (messaging/submissions),
with the bindings' store standing in and both clocks the test's: a send in progress is
waited for _CLAIM_WAIT_S of elapsed time, read again every _CLAIM_POLL_S; a claim
_STALE_CLAIM_MS old (by the platform's clock) belongs to a send that stopped and is taken
over; an id that keeps being given back is claimed again until the wait is spent. The
store's conditions are driven for real in tests/integration/test_message_chain.py."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks.errors import Conflict
from agentworks.ids import InboxRef
from agentworks.messaging import submissions
from agentworks.messaging.models import SendReceipt, SubmissionBinding
from agentworks.messaging.submissions import Stored, Submission, SubmissionIds
from tests.support.clock import FakeClock

POLL, WAIT = 0.5, 3.0  # exact in binary: the bound is met exactly, not within a rounding


@pytest.fixture(autouse=True)
def _pace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submissions, "_CLAIM_POLL_S", POLL)
    monkeypatch.setattr(submissions, "_CLAIM_WAIT_S", WAIT)


class Bindings:
    """The bindings' store: answers each claim with `claims` (then the last again) and
    each read with `held`."""

    def __init__(self, claims: list[tuple[bool, SubmissionBinding | None]],
                 held: SubmissionBinding | None = None) -> None:  # fmt: skip
        self.claims, self.held = claims, held
        self.claimed: list[SubmissionBinding] = []
        self.reads: list[tuple[str, str, str]] = []  # the keys read again
        self.taken_over: list[SubmissionBinding] = []

    def claim_binding(self, binding: SubmissionBinding) -> tuple[bool, SubmissionBinding | None]:
        self.claimed.append(binding)
        return self.claims.pop(0) if len(self.claims) > 1 else self.claims[0]

    def get_binding(
        self, account_id: str, sender: str, submission_id: str, now_ms: int
    ) -> SubmissionBinding | None:
        self.reads.append((account_id, sender, submission_id))
        return self.held

    def take_over(self, stale: SubmissionBinding, mine: SubmissionBinding) -> bool:
        self.taken_over.append(stale)
        return True

    def find_submission(self, *args: Any) -> None:
        return None  # the stopped send stored nothing

    def complete_binding(self, *args: Any) -> None:
        pass

    def release_binding(self, *args: Any) -> None:
        pass


INBOX = InboxRef(conversation="01JCZ3M8QK9T7V5W2X4Y6Z8A0B", side="a")


def _submission() -> Submission:
    return Submission("acct", "external", "sub-1", "digest", INBOX)


def _pending(claimed_at: int) -> SubmissionBinding:
    return SubmissionBinding(
        content_hash="digest", inbox_id=INBOX.inbox_id, conversation_id="cnv", message_id=None,
        created_at=None, claim="theirs", claimed_at=claimed_at, sender="external",
        submission_id="sub-1", account_id="acct",
    )  # fmt: skip


def _ids(bindings: Bindings) -> tuple[SubmissionIds, FakeClock, FakeClock]:
    platform, waiting = FakeClock(), FakeClock(start=0.0)
    return SubmissionIds(bindings, platform, waiting), platform, waiting  # type: ignore[arg-type]


def _sent(_: str | None) -> Stored:
    receipt = SendReceipt(inbox_id="ibx", conversation_id="cnv", message_id="msg_mine",
                          receipt="stored", created_at="2027-01-01T00:00:00Z")  # fmt: skip
    return Stored(receipt, 1)


def test_a_send_in_progress_is_waited_for_until_the_wait_is_spent() -> None:
    bindings = Bindings([(False, None)])
    ids, platform, waiting = _ids(bindings)
    fresh = _pending(int(platform.now() * 1000))
    bindings.claims, bindings.held = [(False, fresh)], fresh
    with pytest.raises(Conflict) as busy:
        ids.once(_submission(), _sent)
    assert busy.value.message == (
        "A send with this submission_id is still in progress; retry in a few seconds with the "
        "same submission_id."
    )
    assert busy.value.details == {"field": "submission_id"}
    assert waiting.now() == WAIT  # gave up at the bound, not a poll later
    assert bindings.reads == [("acct", "external", "sub-1")] * int(WAIT / POLL)


def test_an_id_given_back_again_and_again_is_claimed_until_the_wait_is_spent() -> None:
    bindings = Bindings([(False, None)])
    ids, _, waiting = _ids(bindings)
    with pytest.raises(Conflict) as busy:
        ids.once(_submission(), _sent)
    assert busy.value.message == (
        "This submission_id is being retried concurrently; retry in a few seconds."
    )
    assert busy.value.details == {"field": "submission_id"}
    assert waiting.now() == WAIT
    assert len(bindings.claimed) == WAIT / POLL + 1  # one at each pause's end, and the first


def test_a_claim_exactly_as_old_as_the_bound_is_taken_over() -> None:
    bindings = Bindings([(False, None)])
    ids, platform, _ = _ids(bindings)
    now_ms = int(platform.now() * 1000)
    stale = _pending(now_ms - submissions._STALE_CLAIM_MS)
    bindings.claims = [(False, stale)]
    assert ids.once(_submission(), _sent).message_id == "msg_mine"
    assert bindings.taken_over == [stale]


def test_a_claim_just_younger_than_the_bound_is_waited_for() -> None:
    bindings = Bindings([(False, None)])
    ids, platform, _ = _ids(bindings)
    young = _pending(int(platform.now() * 1000) - submissions._STALE_CLAIM_MS + 1)
    bindings.claims, bindings.held = [(False, young)], young
    with pytest.raises(Conflict):
        ids.once(_submission(), _sent)
    assert bindings.taken_over == []
