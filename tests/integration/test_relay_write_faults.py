"""Relay writes under the failures AWS produces and moto never does (issue 9): a conflicted
publish is retried, a throttled one answers 503 with nothing half-written, an admission
whose answer was lost is still one run, and a throttled checkpoint fails only its attempt —
the next one completes the run."""

from __future__ import annotations

from typing import Any

from tests.integration.relay_support import publish, relay_api, relay_files, start, wait_run

__all__ = ["relay_api"]

ONE_STEP = """
    from agentworks_relay import step

    async def run(INPUT):
        return {"twice": await step("double", lambda n: n * 2, INPUT["n"])}
"""


def _writes_relay_head(request: dict[str, Any]) -> bool:
    return any(
        str(item.get("Put", {}).get("Item", {}).get("pk", {}).get("S", "")).startswith("RELAYS#")
        for item in request.get("TransactItems", [])
    )


def _admits_a_run(request: dict[str, Any]) -> bool:
    return any(
        str(item.get("Put", {}).get("Item", {}).get("pk", {}).get("S", "")).startswith("RRKEY#")
        for item in request.get("TransactItems", [])
    )


def _starts_a_step(request: dict[str, Any]) -> bool:
    """A step's start: its checkpoint's Put, in the transaction with the run's step count."""
    puts = [item.get("Put", {}) for item in request.get("TransactItems", [])]
    return any(str(p.get("Item", {}).get("sk", {}).get("S", "")).startswith("STEP#") for p in puts)


def test_a_conflicted_publish_is_retried_and_a_throttled_one_writes_nothing(
    stack: Any, api: Any, faults: Any
) -> None:
    admin = stack.admin_token
    conflict = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["TransactionConflict", "None", "None"],
        where=_writes_relay_head,
    )
    first = publish(api, admin, relay_files("faulty", ONE_STEP))
    assert conflict.injected == 1 and first["version"] == 1
    throttled = faults.exhaust(
        "TransactWriteItems", "ProvisionedThroughputExceededException", where=_writes_relay_head
    )
    busy = api(
        "POST",
        "/api/relays",
        admin,
        {"files": relay_files("faulty", ONE_STEP.replace("n * 2", "2 * n"))},
    )
    assert busy.status == 503, busy.body
    assert throttled.injected == faults.max_attempts
    releases = api("GET", "/api/relays/faulty/releases", admin).body
    assert [r["version"] for r in releases["releases"]] == [1]  # nothing half-written
    faults.clear()
    assert (
        publish(api, admin, relay_files("faulty", ONE_STEP.replace("n * 2", "2 * n")))["version"]
        == 2
    )


def test_an_admission_whose_answer_was_lost_is_one_run(
    stack: Any, api: Any, agents: Any, faults: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("faulty", ONE_STEP))
    caller = agents.connection("caller")["token"]
    lost = faults.fail(
        "TransactWriteItems", "InternalServerError", where=_admits_a_run, commit_first=True
    )
    body = {"function": "run", "input": {"n": 2}, "idempotency_key": "k"}
    accepted = start(api, caller, "faulty", body)
    assert lost.injected == 1
    done = wait_run(api, caller, "faulty", accepted["run_id"])
    assert (done["status"], done["result"], done["attempts"]) == ("succeeded", {"twice": 4}, 1)
    assert start(api, caller, "faulty", body)["run_id"] == accepted["run_id"]


def test_a_throttled_admission_answers_503_and_the_same_key_then_admits_once(
    stack: Any, api: Any, agents: Any, faults: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("faulty", ONE_STEP))
    caller = agents.connection("caller")["token"]
    faults.exhaust(
        "TransactWriteItems", "ProvisionedThroughputExceededException", where=_admits_a_run
    )
    body = {"function": "run", "input": {"n": 3}, "idempotency_key": "k"}
    busy = api("POST", "/api/relays/faulty/runs", caller, body)
    assert busy.status == 503, busy.body
    faults.clear()
    accepted = start(api, caller, "faulty", body)
    assert accepted["replayed"] is False
    assert wait_run(api, caller, "faulty", accepted["run_id"])["result"] == {"twice": 6}


def test_a_throttled_checkpoint_fails_only_its_attempt(
    stack: Any, api: Any, agents: Any, faults: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("faulty", ONE_STEP))
    caller = agents.connection("caller")["token"]
    throttled = faults.exhaust(
        "TransactWriteItems", "ProvisionedThroughputExceededException", where=_starts_a_step
    )
    accepted = start(
        api, caller, "faulty", {"function": "run", "input": {"n": 5}, "idempotency_key": "k"}
    )
    done = wait_run(api, caller, "faulty", accepted["run_id"])
    assert throttled.injected == faults.max_attempts
    assert (done["status"], done["result"], done["attempts"]) == ("succeeded", {"twice": 10}, 2)
    assert [(s["name"], s["attempt"]) for s in done["steps"]] == [("double", 2)]
