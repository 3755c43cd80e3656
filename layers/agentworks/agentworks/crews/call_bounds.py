"""What a call record may hold, in stored bytes, so that it stays one DynamoDB item (under
400 KB) at every limit at once (F2–F8).

`args` are bounded at admission (ARGS_MAX_BYTES) and never change. Every other growing
field has its own budget (limits.CALL_*_MAX_BYTES): text past it is shortened with a marker,
lists lose their oldest entries first (only the newest answer is read by the next turn). An
inline result gets what is left after the call's args and all of those budgets, so the sum
holds whatever is appended later; a larger result goes to the call's result.json (F6).
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from agentworks import limits

if TYPE_CHECKING:
    from agentworks.crews.models import CallRecord

SHORTENED = " …[shortened]"


def stored_size(value: Any) -> int:
    """Bytes of `value` as the record stores it (compact JSON, UTF-8)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def clip_text(text: str, max_bytes: int) -> str:
    """`text` if it fits in `max_bytes` stored, else its longest head that fits + marker."""
    if len(text) <= max_bytes and stored_size(text) <= max_bytes:
        return text
    head = text[:max_bytes]  # every character stores as at least one byte
    low, high = 0, len(head)
    while low < high:  # the longest head whose shortened form fits
        mid = (low + high + 1) // 2
        if stored_size(head[:mid] + SHORTENED) <= max_bytes:
            low = mid
        else:
            high = mid - 1
    return head[:low] + SHORTENED


def _clip_optional(text: str | None, max_bytes: int) -> str | None:
    return None if text is None else clip_text(text, max_bytes)


def _newest_within(entries: list[Any], max_bytes: int) -> list[Any]:
    """The newest entries whose list stores in `max_bytes` (oldest dropped first)."""
    total, start = 2, len(entries)  # "[]"
    while start > 0:
        cost = stored_size(entries[start - 1]) + (1 if start < len(entries) else 0)
        if total + cost > max_bytes:
            break
        total += cost
        start -= 1
    return list(entries[start:])


def _clip_entries(entries: list[str], max_bytes: int) -> list[str]:
    each = max_bytes // 4  # one entry never takes the whole budget
    return _newest_within([clip_text(e, each) for e in entries], max_bytes)


def bound_record(record: CallRecord) -> CallRecord:
    """The record with every growing field within its budget (a copy; the input is kept)."""
    bounded = replace(
        record,
        final_text=_clip_optional(record.final_text, limits.CALL_FINAL_TEXT_MAX_BYTES),
        progress=_clip_entries(record.progress, limits.CALL_PROGRESS_MAX_BYTES),
        errors=_clip_entries(record.errors, limits.CALL_ERRORS_MAX_BYTES),
        handoff_message=_clip_optional(
            record.handoff_message, limits.CALL_HANDOFF_MESSAGE_MAX_BYTES
        ),
        correction=_clip_optional(record.correction, limits.CALL_CORRECTION_MAX_BYTES),
        files=_newest_within(record.files, limits.CALL_FILES_MAX_BYTES),
        mcp_calls=_newest_within(record.mcp_calls, limits.CALL_MCP_CALLS_MAX_BYTES),
        answers=_newest_within(
            [
                {**a, "answer": clip_text(a["answer"], limits.CALL_ANSWERS_MAX_BYTES // 2)}
                for a in record.answers
            ],
            limits.CALL_ANSWERS_MAX_BYTES,
        ),
    )
    each = limits.CALL_QUESTIONS_MAX_BYTES // 4
    questions = [replace(p, question=clip_text(p.question, each)) for p in record.pending_inputs]
    # Measured as stored (asdict), kept as PendingInput.
    kept = len(_newest_within([asdict(q) for q in questions], limits.CALL_QUESTIONS_MAX_BYTES))
    bounded.pending_inputs = questions[len(questions) - kept :]
    return bounded


def _others_max() -> int:
    return (
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


def inline_result_max(record: CallRecord) -> int:
    """Stored bytes an inline result of this call may take (at most RESULT_INLINE_MAX_BYTES)."""
    room = limits.CALL_RECORD_MAX_BYTES - stored_size(record.args) - _others_max()
    return max(0, min(limits.RESULT_INLINE_MAX_BYTES, room))
