"""Scripted-adapter entrypoints for workflow tests: each records what it was asked, and
when, so a test can check barriers, replays and histories against real turns."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

from agentworks.crews.adapters.base import AdapterError, Handoff, TurnRequest, TurnResult


@dataclass(frozen=True)
class Turn:
    request: TurnRequest  # all of it, as the adapter received it
    began: float  # time.monotonic()
    ended: float

    @property
    def prompt(self) -> str:
        return self.request.prompt

    @property
    def history(self) -> tuple[dict[str, str], ...]:
        return self.request.history

    @property
    def answer(self) -> str | None:
        return self.request.answer


TURNS: list[Turn] = []
_LOCK = threading.Lock()
_BEGAN = threading.Condition(_LOCK)  # notified as each turn begins
_BEGUN: list[str] = []  # the prompts of the turns begun so far
AWAIT_SECONDS = 60.0  # `await X` gives up (and fails the turn) after this


def reset() -> None:
    with _LOCK:
        TURNS.clear()
        _BEGUN.clear()


def _await_end(text: str) -> None:
    """Blocks until a turn whose prompt holds `text` has ended (it was recorded)."""
    with _BEGAN:
        if not _BEGAN.wait_for(lambda: any(text in t.prompt for t in TURNS), AWAIT_SECONDS):
            raise AdapterError(f"no turn with {text!r} ended while this one waited")


def _await(text: str, own: str) -> None:
    """Blocks until another turn whose prompt holds `text` has begun: proof that the two run
    at once, with no clock involved (run one after the other, this turn fails)."""
    with _BEGAN:
        began = lambda: any(text in p and p != own for p in _BEGUN)  # noqa: E731
        if not _BEGAN.wait_for(began, AWAIT_SECONDS):
            raise AdapterError(f"no turn with {text!r} began while this one waited")


def turns_for(text: str) -> list[Turn]:
    with _LOCK:
        return [t for t in TURNS if text in t.prompt]


def timed(request: TurnRequest) -> TurnResult:
    """Waits for another turn to begin on `await TEXT`, or to end on `after TEXT`; sleeps
    `sleep N` seconds (real time) when the prompt says so; costs `cost N` USD; fails on
    `explode` (with no text on `explode silently`); hands off on `hand off` (as only a
    mailbox profile's turn does); asks `ask: QUESTION` until answered (`ask always:
    QUESTION`: after every answer too); on a correction of a `fixable` prompt answers
    `{"n": 1}`; else answers with the prompt, the answer and the session's history."""
    began = time.monotonic()
    with _BEGAN:
        _BEGUN.append(request.prompt)
        _BEGAN.notify_all()
    if awaited := re.search(r"await (\w+)", request.prompt):
        _await(awaited.group(1), request.prompt)
    if found := re.search(r"sleep ([\d.]+)", request.prompt):
        time.sleep(float(found.group(1)))
    cost = float(found.group(1)) if (found := re.search(r"cost ([\d.]+)", request.prompt)) else 0
    if waited := re.search(r"after (\w+)", request.prompt):
        _await_end(waited.group(1))
    with _BEGAN:
        TURNS.append(Turn(request, began, time.monotonic()))
        _BEGAN.notify_all()
    if "explode silently" in request.prompt:
        raise AdapterError("")
    if "explode" in request.prompt:
        raise AdapterError("exploded as asked")
    if "hand off" in request.prompt:
        return TurnResult(handoff=Handoff("reviewer", "over to you"), cost_usd=cost)
    if request.correction and "fixable" in request.prompt:
        return TurnResult(final_text='{"n": 1}', cost_usd=cost)
    if asked := re.search(r"ask always: ([^.]+)", request.prompt):
        return TurnResult(question=asked.group(1), cost_usd=cost)
    if (asked := re.search(r"ask: ([^.]+)", request.prompt)) and request.answer is None:
        return TurnResult(question=asked.group(1), cost_usd=cost)
    said = f"did: {request.prompt}"
    if request.answer:
        said += f" | answer: {request.answer}"
    if request.history:
        said += " | history: " + " / ".join(t["content"] for t in request.history)
    return TurnResult(final_text=said, cost_usd=cost)


def uses_functions(request: TurnRequest) -> TurnResult:
    """A session that lists a workflow's functions, calls one and reads the call again, as
    its step's source workflow (W10)."""
    if request.functions is None:
        raise AdapterError("no function access in this session")
    listed = request.functions.list("workflow:reviewer")
    names = ",".join(f["name"] for f in listed["functions"])
    called = request.functions.call_and_wait("workflow:reviewer", "review", {"REPO": "acme/z"})
    again = request.functions.status(called["call_id"])
    return TurnResult(
        final_text=f"functions: {names}; state: {again['state']}; said: {again['final_text']}"
    )


def tells_its_time_left(request: TurnRequest) -> TurnResult:
    """Answers the seconds its tool calls may take: the invocation's time left, if the
    engine handed it on."""
    bound = request.mcp_tools.time_left if request.mcp_tools is not None else None
    return TurnResult(final_text=f"time left: {bound() if bound else None}")


def echoes_then_fails(request: TurnRequest) -> TurnResult:
    """Calls the attached `echo` with the prompt, then fails the turn: the call was made."""
    if request.mcp_tools is None:
        raise AdapterError("no tools in this session")
    request.mcp_tools.call("tools", "echo", {"text": request.prompt})
    raise AdapterError("gave up after the tool answered")
