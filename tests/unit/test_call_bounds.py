"""F2–F8: what a call record keeps of each growing field, at and just past its budget
(limits.CALL_*_MAX_BYTES): text that fits is kept whole, longer text is shortened with a
marker to fit; a list keeps its newest entries that fit, the oldest going first. And an
inline result gets what CALL_RECORD_MAX_BYTES leaves after args and every budget."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from agentworks import limits
from agentworks.crews.call_bounds import (
    SHORTENED,
    bound_record,
    clip_text,
    inline_result_max,
    stored_size,
)
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
    if "tool" in entry:
        return len(entry["tool"]) - 4
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
        (
            "mcp_calls",
            limits.CALL_MCP_CALLS_MAX_BYTES,
            lambda n, w: {"tool": f"{n:04d}" + "m" * w, "outcome": "ok"},
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


def _is_longest_head_that_fits(kept: str, text: str, max_bytes: int) -> bool:
    """`kept` is a head of `text` and the marker, within `max_bytes` stored, and one more
    character of `text` would not fit."""
    head = kept.removesuffix(SHORTENED)
    return (
        kept.endswith(SHORTENED)
        and text.startswith(head)
        and stored_size(kept) <= max_bytes
        and stored_size(text[: len(head) + 1] + SHORTENED) > max_bytes
    )


@pytest.mark.parametrize("max_bytes", [40, 41, 42, 43, 100, 1001])
@pytest.mark.parametrize("char", ["x", "é", EMOJI])  # 1, 2 and 4 bytes stored
def test_shortened_text_keeps_the_longest_head_that_fits(max_bytes: int, char: str) -> None:
    text = char * max_bytes
    assert _is_longest_head_that_fits(clip_text(text, max_bytes), text, max_bytes)
    # ASCII shortens to the budget's last byte.
    if char == "x":
        assert stored_size(clip_text(text, max_bytes)) == max_bytes


def test_a_budget_with_room_for_the_marker_alone_keeps_no_head() -> None:
    only_marker = stored_size(SHORTENED)
    assert clip_text("x" * 100, only_marker) == SHORTENED
    assert clip_text("x" * 100, only_marker + 1) == "x" + SHORTENED


@pytest.mark.parametrize(
    ("field", "budget"),
    [
        ("progress", limits.CALL_PROGRESS_MAX_BYTES),
        ("errors", limits.CALL_ERRORS_MAX_BYTES),
    ],
)
def test_one_long_progress_or_error_entry_keeps_a_quarter_of_its_budget(
    field: str, budget: int
) -> None:
    long = "p" * budget
    (kept,) = getattr(bound_record(_record(**{field: ["short", long]})), field)[1:]
    assert _is_longest_head_that_fits(kept, long, budget // 4)
    assert stored_size(kept) == budget // 4


def test_one_long_answer_keeps_half_the_answers_budget() -> None:
    budget = limits.CALL_ANSWERS_MAX_BYTES
    long = "a" * budget
    (kept,) = bound_record(_record(answers=[{"request_id": "req_1", "answer": long}])).answers
    assert kept["request_id"] == "req_1"
    assert stored_size(kept["answer"]) == budget // 2
    assert _is_longest_head_that_fits(kept["answer"], long, budget // 2)


def test_one_long_question_is_kept_shortened_to_a_quarter_of_the_questions_budget() -> None:
    budget = limits.CALL_QUESTIONS_MAX_BYTES
    long = "q" * budget
    (kept,) = bound_record(_record(pending_inputs=[PendingInput("req_1", long, 7)])).pending_inputs
    assert (kept.request_id, kept.asked_at) == ("req_1", 7)
    assert stored_size(kept.question) == budget // 4
    assert _is_longest_head_that_fits(kept.question, long, budget // 4)


def test_entries_of_different_sizes_are_each_counted_at_their_own_size() -> None:
    """The oldest entry is the large one: the list fits exactly, and a byte more drops
    just that one."""
    budget = limits.CALL_FILES_MAX_BYTES
    small = [{"path": f"f{n}", "size": 1} for n in range(3)]
    rest = budget - stored_size([{"path": "", "size": 1}, *small])
    files = [{"path": "b" * rest, "size": 1}, *small]
    assert stored_size(files) == budget
    assert bound_record(_record(files=files)).files == files
    past = [{"path": "b" * (rest + 1), "size": 1}, *small]
    assert bound_record(_record(files=past)).files == small
    # The newest is the large one, leaving no room for any other: it is kept alone.
    alone = budget - stored_size([{"path": "", "size": 1}])
    newest = {"path": "n" * alone, "size": 1}
    assert bound_record(_record(files=[*small, newest])).files == [newest]
