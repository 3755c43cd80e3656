"""The bridge journal's rules, one method at a time, on a clock the test controls: what an
attachment records, the watermark that keeps a message from starting a second turn, the
offer states, reclaiming offered metadata, detaching, and the outbox. Written to kill the
mutants `make mutate` found alive (docs/benchmarks.md, "Mutation testing")."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworks_cli.bridge import journal as journal_module
from agentworks_cli.bridge.journal import Incoming, Journal, message_seq
from tests.support.clock import FakeClock

CONV = "01JZ0000000000000000000000"
INBOX = f"ibx_{CONV}b"
DAY = 24 * 3600


def _messages(count: int, start: int = 1, body: str = "hi", sender: str = "agent:w") -> list:
    return [
        Incoming(f"msg_{CONV}b{seq:010d}", INBOX, seq, sender, f"{body} {seq}")
        for seq in range(start, start + count)
    ]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_800_000_000.0)


@pytest.fixture
def journal(tmp_path: Path, clock: FakeClock) -> Journal:
    journal = Journal(tmp_path / "bridge" / "journal.sqlite3", clock=clock.now)
    journal.attach("claude:a", "claude", "alpha", "a.json")
    return journal


def _offer_all(journal: Journal, session: str = "claude:a") -> list[str]:
    offered = [o.message_id for o in journal.take_offers(session, 10_000)]
    journal.emitted(session, offered)
    return offered


def test_a_message_id_ends_in_its_ten_digit_sequence() -> None:
    assert message_seq(f"msg_{CONV}b0000000042") == 42
    assert message_seq(f"msg_{CONV}a1234567890") == 1_234_567_890


def test_an_attachment_records_who_it_is_and_when(journal: Journal, clock: FakeClock) -> None:
    found = journal.attachment("claude:a")
    assert found is not None
    assert (found.session, found.provider, found.agent_name, found.config_path) == (
        "claude:a",
        "claude",
        "alpha",
        "a.json",
    )
    assert (found.state, found.purpose, found.purpose_at) == ("attached", None, None)
    assert (found.attached_at, found.blocks, found.mailbox_cursor) == (clock.now(), 0, None)
    assert journal.attachment("claude:unknown") is None


def test_a_purpose_is_stamped_when_it_changes_and_kept_when_omitted(
    journal: Journal, clock: FakeClock
) -> None:
    clock.advance(10)
    first = journal.attach("claude:a", "claude", "alpha", "a.json", purpose="review")
    assert (first.purpose, first.purpose_at) == ("review", clock.now())
    clock.advance(10)
    again = journal.attach("claude:a", "claude", "alpha", "b.json")  # no purpose given
    assert (again.purpose, again.purpose_at, again.config_path) == (
        "review",
        first.purpose_at,
        "b.json",
    )
    journal.set_blocks("claude:a", 3)
    reattached = journal.attach("claude:a", "claude", "beta", "b.json", purpose="review")
    assert (reattached.purpose_at, reattached.agent_name, reattached.blocks) == (
        first.purpose_at,  # the same purpose: not a change
        "beta",
        0,  # the loop guard starts over
    )


def test_attachments_are_listed_oldest_first(journal: Journal, clock: FakeClock) -> None:
    clock.advance(5)
    journal.attach("codex:b", "codex", "bravo", "b.json")
    assert [a.session for a in journal.attachments()] == ["claude:a", "codex:b"]
    assert [a.provider for a in journal.attachments()] == ["claude", "codex"]


def test_state_blocks_guidance_and_mailbox_cursor_are_per_attachment(journal: Journal) -> None:
    journal.attach("claude:b", "claude", "bravo", "b.json")
    journal.set_state("claude:a", "offline")
    journal.set_blocks("claude:a", 2)
    journal.set_guidance_at("claude:a", 123.5)
    journal.save_mailbox_cursor("claude:a", "cursor-7")
    a, b = journal.attachment("claude:a"), journal.attachment("claude:b")
    assert a is not None and b is not None
    assert (a.state, a.blocks, a.guidance_at, a.mailbox_cursor) == (
        "offline",
        2,
        123.5,
        "cursor-7",
    )
    assert (b.state, b.blocks, b.guidance_at, b.mailbox_cursor) == ("attached", 0, None, None)


def test_taking_the_name_sends_only_the_other_chats_of_that_name_offline(
    journal: Journal,
) -> None:
    journal.attach("claude:a2", "claude", "alpha", "a.json")
    journal.attach("claude:b", "claude", "bravo", "b.json")
    journal.take_name("claude:a2")
    states = {a.session: a.state for a in journal.attachments()}
    assert states == {"claude:a": "offline", "claude:a2": "attached", "claude:b": "attached"}


def test_inbox_cursors_are_known_and_saved_per_attachment(journal: Journal) -> None:
    journal.attach("claude:b", "claude", "bravo", "b.json")
    journal.know_inbox("claude:a", "ibx_one")
    journal.save_inbox_cursor("claude:a", "ibx_two", "c2")
    journal.know_inbox("claude:a", "ibx_two")  # knowing it again keeps its cursor
    assert journal.inboxes("claude:a") == {"ibx_one": None, "ibx_two": "c2"}
    assert journal.inboxes("claude:b") == {}
    journal.save_inbox_cursor("claude:a", "ibx_one", "c1")
    assert journal.inboxes("claude:a") == {"ibx_one": "c1", "ibx_two": "c2"}


def test_the_watermark_stops_a_message_coming_in_twice(journal: Journal) -> None:
    assert journal.watermark("claude:a", INBOX) == 0
    assert journal.take_in("claude:a", _messages(3)).new == 3
    assert journal.watermark("claude:a", INBOX) == 3
    # A page re-read from an older cursor: the first three are skipped, the fourth is new.
    again = journal.take_in("claude:a", _messages(4))
    assert (again.new, again.full) == (1, False)
    assert journal.queued("claude:a") == 4
    # Offered and reclaimed messages still never come back.
    _offer_all(journal)
    assert journal.take_in("claude:a", _messages(4)).new == 0


def test_a_message_below_the_watermark_does_not_stop_those_after_it(journal: Journal) -> None:
    journal.take_in("claude:a", _messages(1, start=2))
    taken = journal.take_in("claude:a", [*_messages(1, start=2), *_messages(2, start=3)])
    assert taken.new == 2
    assert journal.watermark("claude:a", INBOX) == 4


def test_offers_carry_the_message_as_taken_in(journal: Journal) -> None:
    journal.take_in("claude:a", _messages(2, sender="agent:writer"))
    offers = journal.take_offers("claude:a", 5)
    assert [(o.message_id, o.inbox_id, o.sender, o.body) for o in offers] == [
        (f"msg_{CONV}b0000000001", INBOX, "agent:writer", "hi 1"),
        (f"msg_{CONV}b0000000002", INBOX, "agent:writer", "hi 2"),
    ]
    assert journal.states("claude:a") == {"offering": 2}
    journal.emitted("claude:a", [offers[0].message_id])
    assert journal.states("claude:a") == {"offered": 1, "offering": 1}


def test_channel_offers_are_final_only_once_acknowledged(journal: Journal) -> None:
    journal.take_in("claude:a", _messages(2), read_after="cursor-0")
    written = journal.take_channel_offers("claude:a", 5)
    channeled = journal.channeled("claude:a")
    assert [(c.message_id, c.inbox_id, c.read_after) for c in channeled] == [
        (written[0].message_id, INBOX, "cursor-0"),
        (written[1].message_id, INBOX, "cursor-0"),
    ]
    journal.acknowledged("claude:a", [written[0].message_id])
    assert journal.states("claude:a") == {"offered": 1, "channeled": 1}
    # Acknowledging a message that is not channeled changes nothing.
    journal.take_in("claude:a", _messages(1, start=3))
    journal.acknowledged("claude:a", [f"msg_{CONV}b0000000003"])
    assert journal.states("claude:a") == {"offered": 1, "channeled": 1, "queued": 1}
    assert journal.holds_body("hi 2") and not journal.holds_body("hi 9")
    assert (
        journal._db.execute(
            "SELECT body FROM messages WHERE message_id = ?", (written[0].message_id,)
        ).fetchone()["body"]
        is None
    )


def test_a_body_is_known_after_it_is_dropped(journal: Journal) -> None:
    journal.take_in("claude:a", _messages(1, body="the plan"))
    _offer_all(journal)
    assert journal.holds_body("the plan 1")
    assert journal.holds_body("  the plan 1\n")  # as a prompt repeats it
    assert not journal.holds_body("the plan 2")


def test_offered_metadata_goes_after_seven_days_and_not_before(
    journal: Journal, clock: FakeClock
) -> None:
    journal.take_in("claude:a", _messages(2))
    journal.emitted("claude:a", [journal.take_offers("claude:a", 1)[0].message_id])
    clock.advance(journal_module.OFFERED_KEPT_SECONDS - 1)
    journal.take_in("claude:a", _messages(1, start=3))  # reclaims on the way in
    assert journal.states("claude:a") == {"offered": 1, "queued": 2}
    clock.advance(2)
    journal.take_in("claude:a", _messages(1, start=4))
    assert journal.states("claude:a") == {"queued": 3}  # queued ones stay, however old
    assert journal.watermark("claude:a", INBOX) == 4


def test_a_full_attachment_reclaims_exactly_one_offered_message_per_newcomer(
    journal: Journal,
) -> None:
    limit = journal_module.MESSAGES_PER_ATTACHMENT
    journal.take_in("claude:a", _messages(limit))
    journal.emitted("claude:a", [o.message_id for o in journal.take_offers("claude:a", 3)])
    assert journal.take_in("claude:a", _messages(1, start=limit + 1)).new == 1
    assert journal.states("claude:a") == {"offered": 2, "queued": limit - 2}


def test_a_room_count_is_per_attachment(journal: Journal) -> None:
    limit = journal_module.MESSAGES_PER_ATTACHMENT
    journal.attach("claude:b", "claude", "bravo", "b.json")
    journal.take_in("claude:a", _messages(limit - 1))
    journal.take_in("claude:b", _messages(1))
    # One place left for a: a page of two takes one and says the attachment is full.
    page = journal.take_in("claude:a", _messages(2, start=limit))
    assert (page.new, page.full) == (1, True)


def test_detach_forgets_only_that_attachment(journal: Journal) -> None:
    journal.attach("claude:b", "claude", "bravo", "b.json")
    for session in ("claude:a", "claude:b"):
        journal.take_in(session, _messages(2))
        journal.save_inbox_cursor(session, INBOX, "c")
        journal.queue_send(session, {"submission_id": f"sub-{session}", "body": "x"})
    journal.detach("claude:a")
    assert journal.attachment("claude:a") is None
    assert journal.inboxes("claude:a") == {} and journal.states("claude:a") == {}
    assert journal.watermark("claude:a", INBOX) == 0
    assert [session for session, _ in journal.unsent()] == ["claude:b"]
    assert journal.states("claude:b") == {"queued": 2}
    assert journal.inboxes("claude:b") == {INBOX: "c"}


def test_the_outbox_sends_each_submission_once_in_order(journal: Journal, clock: FakeClock) -> None:
    first = {"submission_id": "sub-1", "to": "bravo", "body": "one"}
    journal.queue_send("claude:a", first)
    clock.advance(1)
    journal.queue_send("claude:a", {"submission_id": "sub-2", "to": "bravo", "body": "two"})
    journal.queue_send("claude:a", {**first, "body": "changed"})  # the same submission
    assert journal.unsent() == [
        ("claude:a", first),
        ("claude:a", {"submission_id": "sub-2", "to": "bravo", "body": "two"}),
    ]
    journal.sent("sub-1", {"message_id": "msg_1"})
    assert [request["submission_id"] for _, request in journal.unsent()] == ["sub-2"]
    row = journal._db.execute("SELECT * FROM outbox WHERE submission_id = 'sub-1'").fetchone()
    assert (row["sent_at"], row["receipt"]) == (clock.now(), '{"message_id": "msg_1"}')


def test_reattaching_an_offline_chat_brings_it_back(journal: Journal) -> None:
    journal.set_state("claude:a", "offline")
    assert journal.attach("claude:a", "claude", "alpha", "a.json").state == "attached"


def test_the_body_bound_holds_within_one_page(
    journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "BODY_BYTES_TOTAL", 100)
    page = [
        Incoming(f"msg_{CONV}b{seq:010d}", INBOX, seq, "agent:w", "x" * 40) for seq in (1, 2, 3)
    ]
    taken = journal.take_in("claude:a", page)
    assert (taken.new, taken.full) == (2, True)  # 80 bytes held; a third would make 120
    assert journal.watermark("claude:a", INBOX) == 2
