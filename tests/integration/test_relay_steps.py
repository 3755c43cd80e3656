"""Durable steps (R4): a retried run reuses completed checkpoints, so a side effect happens
once; a step lost mid-way is uncertain — replayed only when declared safe, otherwise the
run ends needs_reconciliation with the evidence; an explicit retry continues a failed run."""

from __future__ import annotations

from typing import Any

from tests.integration.relay_support import publish, relay_api, relay_files, start, wait_run

__all__ = ["relay_api"]

# The first step's side effect is a message to `ledger` (counted in the messages table);
# the second step fails on the first attempt only.
SECOND_STEP_FAILS = """
    from agentworks_relay import attempt, platform, step

    def flaky():
        if attempt() == 1:
            raise RuntimeError("the second step fails on the first attempt")
        return "ok"

    async def run(INPUT):
        sent = await step("notify", platform.send, "charged " + INPUT["order"],
                          target="agent:ledger", agent_name="billing")
        second = await step("second", flaky)
        return {"message_id": sent["message_id"], "second": second, "attempt": attempt()}
"""

# The process is lost inside the step on the first attempt (no checkpoint says it finished).
LOST_IN_STEP = """
    import os
    from agentworks_relay import attempt, step

    def charge():
        if attempt() == 1:
            os._exit(3)
        return "charged"

    async def run(INPUT):
        return {"charge": await step("charge", charge, safe=INPUT.get("safe", False))}
"""

# Fails every attempt of its first execution (3); the explicit retry's attempt succeeds.
FAILS_UNTIL_RETRIED = """
    from agentworks_relay import attempt, platform, step

    async def run(INPUT):
        await step("notify", platform.send, "once", target="agent:ledger", agent_name="billing")
        if attempt() < 4:
            raise RuntimeError("still broken")
        return {"done": True}
"""


def _ledger_messages(api: Any, token: str) -> list[dict[str, Any]]:
    reply = api("GET", "/v1/messages", token, query={"agent_name": "ledger"})
    assert reply.status == 200, reply.body
    return list(reply.body["messages"])


def test_a_retried_run_reuses_the_first_steps_checkpoint_so_its_side_effect_happens_once(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("billing", SECOND_STEP_FAILS))
    ledger = agents.named("ledger")
    billing = agents.named("billing")
    run = start(
        api,
        billing,
        "billing",
        {"function": "run", "input": {"order": "o-1"}, "idempotency_key": "o-1"},
    )
    done = wait_run(api, billing, "billing", run["run_id"])
    assert done["status"] == "succeeded", done
    assert done["attempts"] == 2 and done["result"]["attempt"] == 2
    assert [(s["name"], s["status"], s["attempt"]) for s in done["steps"]] == [
        ("notify", "completed", 1),  # the first attempt's checkpoint, reused
        ("second", "completed", 2),
    ]
    messages = _ledger_messages(api, ledger)
    assert [m["body"] for m in messages] == ["charged o-1"]
    assert done["result"]["message_id"] == messages[0]["message_id"]


def test_an_uncertain_unsafe_step_ends_the_run_needing_reconciliation(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("charges", LOST_IN_STEP))
    caller = agents.connection("caller")["token"]
    run = start(api, caller, "charges", {"function": "run", "input": {}, "idempotency_key": "k"})
    done = wait_run(api, caller, "charges", run["run_id"])
    assert done["status"] == "needs_reconciliation", done
    assert done["evidence"]["step"] == "charge"
    assert done["evidence"]["started_by_attempt"] == 1 and done["evidence"]["attempt"] == 2
    assert "not declared safe" in done["evidence"]["reason"]
    assert [(s["name"], s["status"]) for s in done["steps"]] == [("charge", "uncertain")]
    # A plain retry is refused until someone has checked the side effect…
    refused = api("POST", f"/api/relays/charges/runs/{run['run_id']}/retry", caller, {})
    assert refused.status == 409 and "replay_uncertain" in refused.body["error"]["message"]
    # …then the step runs again and the run completes.
    again = api(
        "POST",
        f"/api/relays/charges/runs/{run['run_id']}/retry",
        caller,
        {"replay_uncertain": True},
    )
    assert again.status == 202, again.body
    finished = wait_run(api, caller, "charges", run["run_id"])
    assert finished["status"] == "succeeded" and finished["result"] == {"charge": "charged"}


def test_an_uncertain_step_declared_safe_is_replayed(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("charges", LOST_IN_STEP))
    caller = agents.connection("caller")["token"]
    run = start(
        api, caller, "charges", {"function": "run", "input": {"safe": True}, "idempotency_key": "k"}
    )
    done = wait_run(api, caller, "charges", run["run_id"])
    assert done["status"] == "succeeded", done
    assert [(s["name"], s["status"], s["replays"]) for s in done["steps"]] == [
        ("charge", "completed", 1)
    ]


def test_an_explicit_retry_of_a_failed_run_keeps_its_completed_steps(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("billing", FAILS_UNTIL_RETRIED))
    ledger = agents.named("ledger")
    billing = agents.named("billing")
    run = start(api, billing, "billing", {"function": "run", "input": {}, "idempotency_key": "k"})
    failed = wait_run(api, billing, "billing", run["run_id"])
    assert failed["status"] == "failed" and failed["attempts"] == 3, failed
    assert "still broken" in failed["error"]
    retried = api("POST", f"/api/relay-runs/{run['run_id']}/retry", billing, {})
    assert retried.status == 202 and retried.body["status"] == "queued", retried.body
    done = wait_run(api, billing, "billing", run["run_id"])
    assert done["status"] == "succeeded" and done["attempts"] == 4, done
    assert len(_ledger_messages(api, ledger)) == 1  # four attempts, one side effect
    # A succeeded run is not retried.
    assert api("POST", f"/api/relay-runs/{run['run_id']}/retry", billing, {}).status == 409
