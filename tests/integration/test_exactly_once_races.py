"""Issue 26 item 7: every idempotency key and exactly-once claim under 20 racing threads.

moto serialises DynamoDB calls, so threads sent at once would mostly take turns: the read
a guard protects against is lined up instead. Each racing thread's first call of that read
returns only once all 20 have made theirs, so every thread has seen "nothing yet" before
any writes, and only the write's condition can decide (a guard that is itself the first
write is lined up before it). Each test fails with its condition dropped:

- R3 relay idempotency key: the key item's `attribute_not_exists` (run_store.create)
- runner job claim and report: the job's `version = :v` (job_store.save, both paths)
- C6 webhook delivery: the delivery's claim `attribute_not_exists` (subscription_store)
- W11 trigger delivery: the delivery record's condition (registry_store.delivery_put)
- W11 schedule period: `wake_due = :due` (registry_store.claim)
- M2 submission_id: the binding's claim condition (submission_store.claim_binding)
- F4 submission_id: the call binding's condition (call_store.admit)
- W10 submission_id: the call is written in the transaction that creates its run (the binding)
- R1 publish: the head's and release's conditions, and for identical source the
  content hash's too (release_store.publish)
- M9 wakeup: its claim's `#state = :scheduled` (wakeup_store.claim)
- M4 agent name: the registration's `attribute_not_exists` (agent_store.create)
- W11 registration: the definition's `attribute_not_exists` (registry_store.put)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from tests.integration.crew_support import wait_for
from tests.integration.relay_support import publish, relay_api, relay_files
from tests.integration.relay_support import wait_run as wait_relay_run
from tests.integration.runner_support import CLAUDE, runner_token, wait_queued
from tests.integration.test_conversation_requests import ask
from tests.integration.test_conversation_webhooks import receiver, subscribe, webhooks
from tests.integration.test_crew_messages import crew, wait_for_messages, wait_for_state
from tests.integration.test_function_rules import TERMINAL as CALL_ENDS
from tests.integration.test_function_rules import _call, _crew, stack_executions
from tests.integration.test_message_concurrency import _messages_in
from tests.integration.test_wakeups import conversation, wakeup_in_state
from tests.integration.test_workflow_functions import _b as _reviewer
from tests.integration.test_workflow_triggers import (
    PUSH,
    WORKFLOW,
    _post,
    _register,
    _runs,
    _signed,
)
from tests.integration.workflow_support import CLAUDE_CODE, define, start, step_of, wait_run
from tests.support.handlers import LambdaContext, load_handler
from tests.support.streams import StreamReader

__all__ = ["receiver", "relay_api", "webhooks"]

THREADS = 20
T = TypeVar("T")


def race(call: Callable[[int], T], read: tuple[type, str], before: bool = False) -> list[T]:
    """`call(i)` from THREADS threads at once, lined up at `read` (a class and the name of
    its method): each racer's first call of it answers only once every racer has made it,
    so all have read and none has written. `before`: for a guard that is itself the first
    write (put if absent), every racer reaches it before any makes it. Other threads (Step
    Functions') pass straight through."""
    owner, name = read
    original = getattr(owner, name)
    racers: set[int] = set()
    met: set[int] = set()
    lock = threading.Lock()
    meet = threading.Barrier(THREADS, timeout=30)

    def meet_once() -> None:
        me = threading.get_ident()
        with lock:
            first = me in racers and me not in met
            met.add(me)
        if first:
            meet.wait()

    def lined_up(self: Any, *args: Any, **kwargs: Any) -> Any:
        if before:
            meet_once()
        found = original(self, *args, **kwargs)
        if not before:
            meet_once()
        return found

    def racer(index: int) -> T:
        with lock:
            racers.add(threading.get_ident())
        return call(index)

    with pytest.MonkeyPatch.context() as patches:
        patches.setattr(owner, name, lined_up)
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            answers = list(pool.map(racer, range(THREADS)))
    # Every racer reached the meeting point: the race was run, not taken in turns.
    assert len(met & racers) == THREADS
    return answers


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
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    from agentworks.relays.run_store import RelayRunStore

    publish(api, stack.admin_token, relay_files("once", ECHO))
    caller = agents.connection("caller")["token"]
    body = {"function": "run", "input": {"echo": "a"}, "idempotency_key": "k"}

    def admit(_: int) -> Any:
        return api("POST", "/api/relays/once/runs", caller, body)

    # Every admission finds no run under the key before any of them writes one.
    answers = race(admit, (RelayRunStore, "by_key"))
    assert [a.status for a in answers] == [202] * THREADS, [a.body for a in answers]
    run_ids = {a.body["run_id"] for a in answers}
    assert len(run_ids) == 1
    # One admission made it; the other nineteen were told they got the original run.
    assert sorted(a.body["replayed"] for a in answers) == [False] + [True] * (THREADS - 1)
    [run_id] = run_ids
    assert _relay_executions(stack) == [run_id]  # the relay ran once
    done = wait_relay_run(api, caller, "once", run_id)
    assert (done["status"], done["result"]) == ("succeeded", {"echo": "a"})


def test_r3_twenty_first_admissions_with_different_input_make_one_run_and_conflicts(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    from agentworks.relays.run_store import RelayRunStore

    publish(api, stack.admin_token, relay_files("once", ECHO))
    caller = agents.connection("caller")["token"]

    def admit(index: int) -> Any:
        body = {"function": "run", "input": {"echo": f"e{index}"}, "idempotency_key": "k"}
        return api("POST", "/api/relays/once/runs", caller, body)

    answers = race(admit, (RelayRunStore, "by_key"))
    accepted = [(i, a) for i, a in enumerate(answers) if a.status == 202]
    refused = [a for a in answers if a.status != 202]
    assert len(accepted) == 1, [a.body for a in answers]
    assert [(a.status, a.body["error"]["code"]) for a in refused] == [(409, "conflict")] * (
        THREADS - 1
    )
    assert {a.body["error"]["field"] for a in refused} == {"idempotency_key"}
    [(winner, first)] = accepted
    assert _relay_executions(stack) == [first.body["run_id"]]
    done = wait_relay_run(api, caller, "once", first.body["run_id"])
    assert done["result"] == {"echo": f"e{winner}"}  # the admitted input, nobody else's


# ---- runner jobs: twenty runners claim one job, twenty reports of one turn ----


def test_twenty_runners_claiming_one_job_at_once_exactly_one_gets_it_and_it_ends_once(
    api: Any, stack: Any, agents: Any
) -> None:
    from agentworks.runners.job_store import RunnerJobStore

    define(api, stack.admin_token, CLAUDE)
    token = runner_token(agents)
    flow = {"workflowId": "jobs", "stages": [{"steps": [_step("Review auth.ts")]}]}
    run_id = start(api, stack.admin_token, flow)
    wait_queued(stack, 1)

    def claim(index: int) -> Any:
        body = {"runner_id": f"r-{index}", "name": f"bridge {index}", "commands": ["claude"]}
        return api("POST", "/v1/runner/claim", token, body)

    # Every runner reads the job as queued (at its version) before any claims it.
    claims = race(claim, (RunnerJobStore, "get"))
    assert [c.status for c in claims] == [200] * THREADS
    jobs = [(i, c.body["job"]) for i, c in enumerate(claims) if c.body["job"]]
    assert len(jobs) == 1, [c.body for c in claims]
    [(winner, job)] = jobs
    assert job["prompt"] == "Review auth.ts"
    finish = f"/v1/runner/jobs/{job['job_id']}/finish"

    def report(index: int) -> Any:
        body = {"runner_id": f"r-{winner}", "output": f"report {index}", "session_id": "s-1"}
        return api("POST", finish, token, body)

    # The claimer's bridge reports twenty times at once (retries crossing): every report
    # reads the job as claimed before any records its end.
    reports = race(report, (RunnerJobStore, "get"))
    recorded = [(i, r) for i, r in enumerate(reports) if r.status == 200]
    assert len(recorded) == 1, [r.body for r in reports]
    [(first, done)] = recorded
    assert done.body == {"job_id": job["job_id"], "state": "succeeded", "delivered": True}
    for refused in (r for r in reports if r.status != 200):
        assert refused.status == 409, refused.body
        assert "a second report changes nothing" in refused.body["error"]["message"]
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "succeeded"
    assert step_of(run, "s0")["output"] == f"report {first}"  # the one recorded, no other


def _step(prompt: str) -> dict[str, Any]:
    return {"label": "s0", "adapter": "claude-code", "prompt": prompt}


# ---- conversation webhooks (C6): one stream batch handled twenty times at once ----


def test_c6_one_batch_handled_by_twenty_invocations_at_once_is_delivered_once(
    api: Any, stack: Any, agents: Any, receiver: Any, webhooks: Any
) -> None:
    from agentworks.conversation_webhooks.subscription_store import SubscriptionStore

    hook = subscribe(api, stack.admin_token, receiver.url, ["agent_asked"])
    crew(api, stack, "review")
    stream = StreamReader(stack.client, stack.settings.work_table)
    sent = ask(api, agents.connection("caller")["token"], "Clause 1?").body
    batch = stream.records()
    handler = load_handler("webhooks").handler

    def handle(_: int) -> dict[str, int]:
        return dict(handler({"Records": batch}, LambdaContext()))

    # Lambda may hand one batch to several invocations (a retry crossing a slow first
    # one): each reads the subscriptions before any claims the delivery.
    reports = race(handle, (SubscriptionStore, "of_account"))
    assert sum(r["sent"] for r in reports) == 1, reports
    assert [e["event"] for e in receiver.events()] == ["agent_asked"]
    assert receiver.events()[0]["message_id"] == sent["message_id"]
    listed = api("GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token)
    [delivery] = listed.body["deliveries"]
    assert delivery["state"] == "delivered" and len(delivery["attempts"]) == 1


# ---- workflow trigger deliveries (W11): one signed delivery sent twenty times at once ----


def test_w11_one_signed_delivery_sent_twenty_times_at_once_starts_one_run(
    api: Any, stack: Any
) -> None:
    from agentworks.workflows.registry_store import RegistryStore

    define(api, stack.admin_token, CLAUDE_CODE)
    push = _register(api, stack.admin_token)["push"]
    body = json.dumps(PUSH).encode()
    signed = _signed(stack, push["secret"], body)

    def deliver(_: int) -> Any:
        return _post(api, push, body, signed)

    # Every copy finds no record of the delivery before any records it.
    answers = race(deliver, (RegistryStore, "delivery"))
    assert [a.status for a in answers] == [202] * THREADS, [a.body for a in answers]
    assert len({json.dumps(a.body, sort_keys=True) for a in answers}) == 1  # one answer
    run_id = answers[0].body["runId"]
    assert [r["runId"] for r in _runs(api, stack.admin_token)] == [run_id]
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    [pushed] = [t for t in shown["triggers"] if t["name"] == "push"]
    assert len(pushed["runs"]) == 1
    wait_run(api, stack.admin_token, run_id)


# ---- schedules (W11): twenty invocations for one period at once ----


def test_w11_twenty_invocations_for_one_period_at_once_fire_it_once(api: Any, stack: Any) -> None:
    from agentworks.workflows.registry_store import RegistryStore

    define(api, stack.admin_token, CLAUDE_CODE)
    hourly = _register(api, stack.admin_token)["hourly"]
    stack.clock.advance(3600)
    tick = load_handler("tick").handler
    scheduled, minute = {"trigger_id": hourly["triggerId"]}, {"source": "aws.events"}

    def invoke(index: int) -> int:
        # EventBridge Scheduler's invocation (and its retries) crossing the minute round.
        event = scheduled if index % 2 else minute
        return int(tick(event, LambdaContext())["schedules_fired"])

    # Every invocation reads the schedule as due before any moves it on.
    fired = race(invoke, (RegistryStore, "trigger"))
    assert sum(fired) == 1, fired
    [run] = _runs(api, stack.admin_token)
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    [pushed] = [t for t in shown["triggers"] if t["name"] == "hourly"]
    assert [r["runId"] for r in pushed["runs"]] == [run["runId"]]
    wait_run(api, stack.admin_token, run["runId"])


# ---- message sends (M2) and function calls (F4): twenty first sends of one submission_id ----


def test_m2_twenty_first_sends_of_one_submission_id_at_once_store_one_message(
    api: Any, agents: Any, stack: Any
) -> None:
    from agentworks.messaging.conversation_store import ConversationStore

    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    body = {"agent_name": "worker", "target": "agent:reviewer", "message": "exactly once"}
    body["submission_id"] = "race-1"

    def send(_: int) -> Any:
        return api("POST", "/v1/messages", worker, body)

    # The claim is the guard (put if absent): all twenty are at it before any makes it.
    replies = race(send, (ConversationStore, "claim_binding"), before=True)
    assert sorted(r.status for r in replies) == [200] * (THREADS - 1) + [201]
    assert len({r.body["message_id"] for r in replies}) == 1
    inbox_id = replies[0].body["inbox_id"]
    assert [m["body"] for m in _messages_in(stack, inbox_id[4:-1])] == ["exactly once"]
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    assert [m["message_id"] for m in mailbox["messages"]] == [replies[0].body["message_id"]]


def test_f4_twenty_first_calls_of_one_submission_id_at_once_make_one_call(
    api: Any, agents: Any, stack: Any
) -> None:
    from agentworks.crews.call_store import CallStore

    _crew(api, stack)
    caller = agents.connection("caller")["token"]

    def call(_: int) -> Any:
        return _call(api, caller, "summarize", {"text": "a"}, submission_id="job-1")

    # The admission is the guard (the binding put with the call): all are at it at once.
    answers = race(call, (CallStore, "admit"), before=True)
    assert sorted(a.status for a in answers) == [200] * (THREADS - 1) + [202], [
        a.body for a in answers
    ]
    call_ids = {a.body["call_id"] for a in answers}
    assert len(call_ids) == 1
    assert [e["name"] for e in stack_executions(stack)] == list(call_ids)  # one execution
    [call_id] = call_ids
    assert wait_for(api, caller, call_id, CALL_ENDS)["state"] == "succeeded"


def test_w10_twenty_first_calls_of_one_workflow_function_submission_id_start_one_run(
    api: Any, agents: Any, stack: Any
) -> None:
    from agentworks.workflows.function_call_store import WorkflowCallStore

    define(api, stack.admin_token, CLAUDE_CODE)
    caller = agents.connection("caller")
    content = _reviewer([caller["connection_id"]])
    registered = api("PUT", "/v1/workflow-definitions", stack.admin_token, {"content": content})
    assert registered.status == 200, registered.body
    body = {
        "target": "workflow:reviewer",
        "function": "review",
        "args": {"REPO": "acme/api"},
        "submission_id": "review-1",
    }

    def call(_: int) -> Any:
        return api("POST", "/v1/calls", caller["token"], body)

    # Every call finds no call under the submission id before any records one.
    answers = race(call, (WorkflowCallStore, "by_submission"))
    assert sorted(a.status for a in answers) == [200] * (THREADS - 1) + [202]
    assert len({a.body["call_id"] for a in answers}) == 1
    runs = _runs(api, stack.admin_token)
    for run in runs:  # all ended before the verdict, whatever it is
        wait_run(api, stack.admin_token, run["runId"])
    assert len(runs) == 1, f"{len(runs)} runs started for one call"  # the reviewer ran once


# ---- relay releases (R1): twenty first publishes at once ----


def test_r1_twenty_identical_first_publishes_at_once_make_one_release(api: Any, stack: Any) -> None:
    from agentworks.relays.release_store import ReleaseStore

    files = relay_files("once", ECHO)

    def publish_it(_: int) -> Any:
        return api("POST", "/api/relays", stack.admin_token, {"files": files})

    # Every publish finds no Relay yet (no head) before any writes its release.
    answers = race(publish_it, (ReleaseStore, "head"))
    assert [a.status for a in answers] == [200] * THREADS, [a.body for a in answers]
    assert sorted(a.body["created"] for a in answers) == [False] * (THREADS - 1) + [True]
    assert {(a.body["version"], a.body["content_hash"]) for a in answers} == {
        (1, answers[0].body["content_hash"])
    }
    listed = api("GET", "/api/relays/once/releases", stack.admin_token).body
    assert [(r["version"], r["active"]) for r in listed["releases"]] == [(1, True)]


def test_r1_twenty_different_first_publishes_at_once_make_one_release_and_conflicts(
    api: Any, stack: Any
) -> None:
    from agentworks.relays.release_store import ReleaseStore

    def publish_it(index: int) -> Any:
        files = relay_files("once", ECHO.replace('"echo"', f'"echo{index}"'))
        return api("POST", "/api/relays", stack.admin_token, {"files": files})

    answers = race(publish_it, (ReleaseStore, "head"))
    made = [a for a in answers if a.status == 200]
    refused = [a for a in answers if a.status != 200]
    assert len(made) == 1, [a.body for a in answers]
    assert [(a.status, a.body["error"]["code"]) for a in refused] == [(409, "conflict")] * (
        THREADS - 1
    )
    [release] = made
    listed = api("GET", "/api/relays/once/releases", stack.admin_token).body
    assert [(r["version"], r["content_hash"]) for r in listed["releases"]] == [
        (1, release.body["content_hash"])
    ]


# ---- named agents (M4): twenty connections register one name at once ----


def test_m4_twenty_connections_registering_one_name_at_once_one_owns_it(
    api: Any, agents: Any, stack: Any
) -> None:
    from agentworks.messaging.agent_store import AgentStore

    tokens = [agents.connection(f"c{i}")["token"] for i in range(THREADS)]

    def register(index: int) -> Any:
        return api("POST", "/v1/agents", tokens[index], {"agent_name": "reviewer"})

    # Every connection finds the name free before any registers it.
    answers = race(register, (AgentStore, "get"))
    owners = [i for i, a in enumerate(answers) if a.status == 200]
    assert len(owners) == 1, [a.body for a in answers]
    for refused in (a for a in answers if a.status != 200):
        assert (refused.status, refused.body["error"]["code"]) == (409, "conflict")
        assert "not on its allow-list" in refused.body["error"]["message"]
    listed = api("GET", "/v1/agents", stack.admin_token).body["agents"]
    assert [a["agent_name"] for a in listed] == ["reviewer"]
    # The owner sends as it; any other of the twenty may not.
    [owner] = owners
    other = tokens[(owner + 1) % THREADS]
    note = {"agent_name": "reviewer", "target": "agent:reviewer", "message": "hi"}
    assert api("POST", "/v1/messages", tokens[owner], note).status == 201
    assert api("POST", "/v1/messages", other, note).status in (403, 404)


# ---- workflow registration (W11): twenty first registrations of one workflow at once ----


def test_w11_twenty_first_registrations_at_once_keep_one_set_of_triggers(
    api: Any, stack: Any
) -> None:
    from agentworks.workflows.registry_store import RegistryStore

    define(api, stack.admin_token, CLAUDE_CODE)

    def register(_: int) -> Any:
        return api("PUT", "/v1/workflow-definitions", stack.admin_token, {"content": WORKFLOW})

    # Every registration finds no workflow yet before any writes one.
    answers = race(register, (RegistryStore, "get"))
    made = [a for a in answers if a.status == 200]
    assert len(made) == 1, [a.body for a in answers]
    for refused in (a for a in answers if a.status != 200):
        assert (refused.status, refused.body["error"]["code"]) == (409, "conflict")
    [winner] = made
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    assert shown["version"] == 1
    won = {t["name"]: t["triggerId"] for t in winner.body["triggers"]}
    assert {t["name"]: t["triggerId"] for t in shown["triggers"]} == won
    # The secret the winner was shown is the one its webhook checks.
    push = next(t for t in winner.body["triggers"] if t["name"] == "push")
    body = json.dumps(PUSH).encode()
    started = _post(api, push, body, _signed(stack, push["secret"], body))
    assert started.status == 202, started.body
    wait_run(api, stack.admin_token, started.body["runId"])


# ---- wakeups (M9): twenty ticks at once find one wakeup due ----


def test_m9_twenty_ticks_at_once_fire_a_due_wakeup_once(api: Any, stack: Any, agents: Any) -> None:
    from agentworks.conversations.wakeup_queue_store import WakeupQueueStore

    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    scheduled = api(
        "POST", "/v1/wakeups", caller, {"inbox_id": sent["inbox_id"], "delay_seconds": 120}
    )
    assert scheduled.status == 201, scheduled.body
    stack.clock.advance(121)
    tick = load_handler("tick").handler

    def run_tick(_: int) -> int:
        return int(tick({"source": "aws.events"}, LambdaContext())["wakeups_fired"])

    # Every tick reads the wakeup as due before any claims it.
    fired = race(run_tick, (WakeupQueueStore, "account_due"))
    assert sum(fired) == 1, fired
    wakeup_id = scheduled.body["wakeup_id"]
    state = wait_for_state(
        api, stack, lambda s: wakeup_in_state(s, wakeup_id)["run_state"] == "succeeded"
    )
    assert wakeup_in_state(state, wakeup_id)["state"] == "fired"
    [answer] = wait_for_messages(api, caller, sent["inbox_id"])  # the Crew's one turn
    assert answer["sender"] == "crew:contracts"
