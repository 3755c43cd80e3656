"""F2–F8: what a call record keeps of each growing field, at and just past its budget
(limits.CALL_*_MAX_BYTES): text that fits is kept whole, longer text is shortened with a
marker to fit; a list keeps its newest entries that fit, the oldest going first. And an
inline result gets what CALL_RECORD_MAX_BYTES leaves after args and every budget."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from agentworks import limits
from agentworks.crews.call_bounds import SHORTENED, bound_record, inline_result_max, stored_size
from agentworks.crews.models import CallRecord, PendingInput

EMOJI = "\U0001f600"  # 4 bytes stored, one character


def _record(**fields: Any) -> CallRecord:
    base: dict[str, Any] = dict(
        call_id="call_x",
        account_id="acct_x",
        crew_name="c",
        crew_id="crew_x",
        function="f",
        args={},
        caller_connection_id="conn_x",
        state="running",
        created_at=1,
        updated_at=1,
    )
    return CallRecord(**(base | fields))


def _text_of(max_bytes: int) -> str:
    """Text whose stored form (JSON, quotes included) takes exactly `max_bytes`."""
    inner = max_bytes - 2
    return EMOJI * (inner // 4) + "x" * (inner % 4)


@pytest.mark.parametrize(
    ("field", "budget"),
    [
        ("final_text", limits.CALL_FINAL_TEXT_MAX_BYTES),
        ("handoff_message", limits.CALL_HANDOFF_MESSAGE_MAX_BYTES),
        ("correction", limits.CALL_CORRECTION_MAX_BYTES),
    ],
)
def test_text_at_its_budget_is_kept_and_past_it_is_shortened_to_fit(field, budget):
    at = _text_of(budget)
    assert stored_size(at) == budget
    assert getattr(bound_record(_record(**{field: at})), field) == at
    past = at + "y"
    kept = getattr(bound_record(_record(**{field: past})), field)
    assert kept.endswith(SHORTENED) and stored_size(kept) <= budget
    assert past.startswith(kept.removesuffix(SHORTENED))
    assert len(kept) > len(at) // 2  # shortened, not emptied


def _entries_filling(budget: int, entry_of, measure=stored_size) -> list[Any]:
    """Entries whose list stores in exactly `budget` bytes, each a small one."""
    entries: list[Any] = []
    n = 0
    while measure([*entries, entry_of(n, 1)]) <= budget:
        entries.append(entry_of(n, 1))
        n += 1
    # Pad the last entry to land on the budget exactly.
    short = budget - measure(entries)
    entries[-1] = entry_of(n - 1, 1 + short)
    assert measure(entries) == budget
    return entries


def _width(entry: Any) -> int:
    """The padding an entry was made with (entry_of's `w`)."""
    if isinstance(entry, str):
        return len(entry) - 4
    return len(entry.get("path", entry.get("answer", ""))) - (4 if "path" in entry else 0)


@pytest.mark.parametrize(
    ("field", "budget", "entry_of"),
    [
        ("progress", limits.CALL_PROGRESS_MAX_BYTES, lambda n, w: f"{n:04d}" + "p" * w),
        ("errors", limits.CALL_ERRORS_MAX_BYTES, lambda n, w: f"{n:04d}" + "e" * w),
        (
            "files",
            limits.CALL_FILES_MAX_BYTES,
            lambda n, w: {"path": f"{n:04d}" + "f" * w, "size": 1},
        ),
        (
            "answers",
            limits.CALL_ANSWERS_MAX_BYTES,
            lambda n, w: {"request_id": f"req_{n:04d}", "answer": "a" * w},
        ),
    ],
)
def test_a_list_at_its_budget_is_kept_and_past_it_loses_its_oldest(field, budget, entry_of):
    entries = _entries_filling(budget, entry_of)
    assert getattr(bound_record(_record(**{field: entries})), field) == entries
    # A byte past the budget (the newest entry one character longer): the oldest goes.
    past = [*entries[:-1], entry_of(len(entries) - 1, _width(entries[-1]) + 1)]
    assert stored_size(past) == budget + 1
    kept = getattr(bound_record(_record(**{field: past})), field)
    assert kept == past[1:]


def test_questions_at_their_budget_are_kept_and_past_it_lose_the_oldest():
    budget = limits.CALL_QUESTIONS_MAX_BYTES

    def question(n: int, width: int) -> PendingInput:
        return PendingInput(f"req_{n:04d}", "q" * width, 1)

    entries = _entries_filling(budget, question, lambda qs: stored_size([asdict(q) for q in qs]))
    assert bound_record(_record(pending_inputs=entries)).pending_inputs == entries
    past = [*entries[:-1], question(len(entries) - 1, len(entries[-1].question) + 1)]
    kept = bound_record(_record(pending_inputs=past)).pending_inputs
    assert kept == past[1:]


def test_an_inline_result_gets_what_the_record_leaves_after_args_and_every_budget():
    budgets = (
        limits.CALL_FINAL_TEXT_MAX_BYTES
        + limits.CALL_PROGRESS_MAX_BYTES
        + limits.CALL_ERRORS_MAX_BYTES
        + limits.CALL_QUESTIONS_MAX_BYTES
        + limits.CALL_ANSWERS_MAX_BYTES
        + limits.CALL_HANDOFF_MESSAGE_MAX_BYTES
        + limits.CALL_CORRECTION_MAX_BYTES
        + limits.CALL_FILES_MAX_BYTES
        + limits.CALL_MCP_CALLS_MAX_BYTES
        + limits.CALL_FIXED_FIELDS_MAX_BYTES
    )
    # The whole record stays under DynamoDB's item bound with room for attribute names.
    assert limits.CALL_RECORD_MAX_BYTES < limits.DYNAMODB_ITEM_MAX_BYTES
    small = _record(args={"text": "t"})
    assert inline_result_max(small) == limits.RESULT_INLINE_MAX_BYTES
    big_args = {"text": "x" * (limits.CALL_RECORD_MAX_BYTES - budgets - 1000)}
    room = inline_result_max(_record(args=big_args))
    assert room == limits.CALL_RECORD_MAX_BYTES - stored_size(big_args) - budgets
    assert stored_size(big_args) + budgets + room == limits.CALL_RECORD_MAX_BYTES


def test_a_call_whose_args_leave_no_room_has_no_inline_result() -> None:
    """Arguments that fill the record leave 0 bytes for an inline result (it goes to a
    file), never a negative room and never a byte more."""
    full = _record(args={"text": "x" * limits.CALL_RECORD_MAX_BYTES})
    assert inline_result_max(full) == 0
