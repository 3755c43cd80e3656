"""Issue 26 item 7: every idempotency key and exactly-once claim under 20 racing threads —
relay runs (R3), runner jobs' claim and report, conversation webhook deliveries (C6),
workflow trigger deliveries (W11).

moto serialises DynamoDB calls, so threads sent at once would mostly take turns: the read
a guard protects against is lined up instead. Each racing thread's first call of that read
returns only once all 20 have made theirs, so every thread has seen "nothing yet" before
any writes, and only the write's condition can decide. Each test fails when its condition
is dropped (see the issue's report)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from tests.integration.relay_support import publish, relay_api, relay_files, wait_run

__all__ = ["relay_api"]

THREADS = 20
T = TypeVar("T")


class Race:
    """Runs one call from THREADS threads; `line_up` makes a method a meeting point."""

    def __init__(self) -> None:
        self._patches = pytest.MonkeyPatch()  # its own: undone after the race, nothing else
        self._racers: set[int] = set()
        self._lined_up: set[int] = set()
        self._lock = threading.Lock()
        self._meet = threading.Barrier(THREADS, timeout=30)

    def line_up(self, owner: type, name: str) -> None:
        """Each racing thread's first call of `owner.name` answers only once every racer has
        made it (the read done, nothing written yet). Other threads pass straight through."""
        original = getattr(owner, name)
        race = self

        def lined_up(self: Any, *args: Any, **kwargs: Any) -> Any:
            found = original(self, *args, **kwargs)
            me = threading.get_ident()
            with race._lock:
                first = me in race._racers and me not in race._lined_up
                race._lined_up.add(me)
            if first:
                race._meet.wait()
            return found

        self._patches.setattr(owner, name, lined_up)

    def run(self, call: Callable[[int], T]) -> list[T]:
        def racer(index: int) -> T:
            with self._lock:
                self._racers.add(threading.get_ident())
            return call(index)

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            answers = list(pool.map(racer, range(THREADS)))
        # Every racer did reach the meeting point: the race was run, not taken in turns.
        assert len(self._lined_up) == THREADS
        self._patches.undo()
        return answers


@pytest.fixture
def race() -> Iterator[Race]:
    lined = Race()
    yield lined
    lined._patches.undo()


# ---- relay runs (R3): one idempotency key, twenty first admissions ----

ECHO = """
    async def run(INPUT):
        return {"echo": INPUT.get("echo")}
"""


def _relay_executions(stack: Any) -> list[str]:
    import boto3

    machine = stack.settings.relay_state_machine_arn
    listed = boto3.client("stepfunctions").list_executions(stateMachineArn=machine)
    return [e["name"] for e in listed["executions"]]


def test_r3_twenty_first_admissions_of_one_key_make_one_run(
    stack: Any, api: Any, agents: Any, relay_api: str, race: Race
) -> None:
    from agentworks.relays.run_store import RelayRunStore

    publish(api, stack.admin_token, relay_files("once", ECHO))
    caller = agents.connection("caller")["token"]
    body = {"function": "run", "input": {"echo": "a"}, "idempotency_key": "k"}
    race.line_up(RelayRunStore, "by_key")  # every admission finds no run under the key
    answers = race.run(lambda _: api("POST", "/api/relays/once/runs", caller, body))
    assert [a.status for a in answers] == [202] * THREADS, [a.body for a in answers]
    run_ids = {a.body["run_id"] for a in answers}
    assert len(run_ids) == 1
    # One admission made it; the other nineteen were told they got the original run.
    assert sorted(a.body["replayed"] for a in answers) == [False] + [True] * (THREADS - 1)
    [run_id] = run_ids
    assert _relay_executions(stack) == [run_id]  # the relay ran once
    done = wait_run(api, caller, "once", run_id)
    assert (done["status"], done["result"]) == ("succeeded", {"echo": "a"})


def test_r3_twenty_first_admissions_with_different_input_make_one_run_and_conflicts(
    stack: Any, api: Any, agents: Any, relay_api: str, race: Race
) -> None:
    from agentworks.relays.run_store import RelayRunStore

    publish(api, stack.admin_token, relay_files("once", ECHO))
    caller = agents.connection("caller")["token"]

    def admit(index: int) -> Any:
        body = {"function": "run", "input": {"echo": f"e{index}"}, "idempotency_key": "k"}
        return api("POST", "/api/relays/once/runs", caller, body)

    race.line_up(RelayRunStore, "by_key")
    answers = race.run(admit)
    accepted = [(i, a) for i, a in enumerate(answers) if a.status == 202]
    refused = [a for a in answers if a.status != 202]
    assert len(accepted) == 1, [a.body for a in answers]
    assert [(a.status, a.body["error"]["code"]) for a in refused] == [(409, "conflict")] * (
        THREADS - 1
    )
    assert {a.body["error"]["field"] for a in refused} == {"idempotency_key"}
    [(winner, first)] = accepted
    assert _relay_executions(stack) == [first.body["run_id"]]
    done = wait_run(api, caller, "once", first.body["run_id"])
    assert done["result"] == {"echo": f"e{winner}"}  # the admitted input, nobody else's
