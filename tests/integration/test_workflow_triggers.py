"""Triggers of a registered workflow (W11): a webhook whose signature checks out starts a
run with its payload mapped to the declared variables, anything else starts nothing with a
clear answer; a schedule fires from the tick once per period; each trigger keeps its run
history; re-registering keeps a trigger's id and secret."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from agentworks import limits
from agentworks.workflows.webhooks import SIGNATURE_HEADER, signature
from tests.integration.workflow_support import CLAUDE_CODE, define, step_of, wait_run
from tests.support.handlers import LambdaContext, load_handler

WORKFLOW = """---
workflowId: on-push
triggers:
  - kind: webhook
    name: push
    variables: {REF: ref, REPO: repository.full_name}
  - kind: webhook
    name: github
    signature: github
    variables: {REF: ref, REPO: repository.full_name}
  - kind: schedule
    name: hourly
    schedule: rate(1 hour)
    input: {REF: main, REPO: acme/api}
---
## review
### look
```yaml
adapter: claude-code
```
Review {{REPO}} at {{REF}}
"""
PUSH = {"ref": "release-2", "repository": {"full_name": "acme/api"}, "pusher": "ada"}


def _register(api: Any, token: str, content: str = WORKFLOW) -> dict[str, Any]:
    registered = api("PUT", "/v1/workflow-definitions", token, {"content": content})
    assert registered.status == 200, registered.body
    return {t["name"]: t for t in registered.body["triggers"]}


def _post(api: Any, trigger: dict[str, Any], body: bytes, headers: dict[str, str]) -> Any:
    return api.raw("POST", trigger["path"], body, headers)


def _signed(stack: Any, secret: str, body: bytes, age: int = 0) -> dict[str, str]:
    return {SIGNATURE_HEADER: signature(secret, int(stack.clock.now()) - age, body)}


def _runs(api: Any, token: str) -> list[dict[str, Any]]:
    return list(api("GET", "/v1/workflows", token).body["runs"])


def _tick() -> dict[str, Any]:
    return dict(load_handler("tick").handler({"source": "aws.events"}, LambdaContext()))


def test_a_signed_webhook_starts_a_run_with_its_payload(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    triggers = _register(api, stack.admin_token)
    push = triggers["push"]
    assert push["path"] == f"/v1/hooks/{push['triggerId']}" and push["secret"]
    body = json.dumps(PUSH).encode()
    fired = _post(api, push, body, _signed(stack, push["secret"], body))
    assert fired.status == 202, fired.body
    run = wait_run(api, stack.admin_token, fired.body["runId"])
    assert run["status"] == "succeeded"
    look = step_of(run, "look")
    assert look["output"] == "Found 2 bugs in acme/api."
    session = api("GET", f"/v1/workflows/{run['runId']}/sessions/{look['sessionId']}",
                  stack.admin_token).body  # fmt: skip
    assert session["turns"][0]["content"] == "Review acme/api at release-2"  # mapped payload
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    [history] = [t["runs"] for t in shown["triggers"] if t["name"] == "push"]
    assert [r["runId"] for r in history] == [fired.body["runId"]]
    assert all(t["secret"] is None for t in shown["triggers"])  # shown once, when made

    github = triggers["github"]
    mac = hmac.new(github["secret"].encode(), body, hashlib.sha256).hexdigest()
    signed = {"X-Hub-Signature-256": f"sha256={mac}"}
    assert _post(api, github, body, signed).status == 202


def test_anything_but_a_good_signature_and_payload_starts_nothing(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    push = _register(api, stack.admin_token)["push"]
    body = json.dumps(PUSH).encode()
    good = _signed(stack, push["secret"], body)
    refusals = [
        _post(api, push, body + b" ", good),  # the body changed after signing
        _post(api, push, body, _signed(stack, "not-the-secret", body)),
        _post(api, push, body, {}),
        _post(api, push, body, _signed(stack, push["secret"], body, age=301)),  # a replay
        _post(api, {"path": "/v1/hooks/trg_01ARZ3NDEKTSV4RRFFQ69G5FAV"}, body, good),
    ]
    assert {(r.status, r.body["error"]["code"]) for r in refusals} == {(401, "unauthenticated")}
    assert len({json.dumps(r.body) for r in refusals}) == 1  # unknown ≡ unsigned
    partial = json.dumps({"ref": "main"}).encode()
    missing = _post(api, push, partial, _signed(stack, push["secret"], partial))
    assert missing.status == 400
    assert "repository.full_name (for REPO)" in missing.body["error"]["message"]
    assert _runs(api, stack.admin_token) == []


def test_a_schedule_fires_once_per_period_from_the_tick(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    _register(api, stack.admin_token)
    assert _tick()["schedules_fired"] == 0  # not due yet
    stack.clock.advance(3600)
    assert _tick()["schedules_fired"] == 1
    assert _tick()["schedules_fired"] == 0  # the same period fires once
    stack.clock.advance(3600 * 3)  # three periods missed: one run, not three
    assert _tick()["schedules_fired"] == 1
    runs = _runs(api, stack.admin_token)
    assert len(runs) == 2 and {r["workflowId"] for r in runs} == {"on-push"}
    run = wait_run(api, stack.admin_token, runs[0]["runId"])
    assert run["status"] == "succeeded"
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    [hourly] = [t for t in shown["triggers"] if t["name"] == "hourly"]
    assert len(hourly["runs"]) == 2 and hourly["nextRunAt"]
    for other in runs[1:]:
        wait_run(api, stack.admin_token, other["runId"])


def test_registering_again_keeps_a_triggers_id_and_secret(api, stack, agents) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    first = _register(api, stack.admin_token)
    again = _register(api, stack.admin_token, WORKFLOW.replace("rate(1 hour)", "rate(2 hours)"))
    assert again["push"]["triggerId"] == first["push"]["triggerId"]
    assert again["push"]["secret"] is None  # still the first one
    body = json.dumps(PUSH).encode()
    assert (
        _post(api, again["push"], body, _signed(stack, first["push"]["secret"], body)).status == 202
    )
    listed = api("GET", "/v1/workflow-definitions", stack.admin_token).body["workflows"]
    assert [(w["workflowId"], w["version"], w["triggers"]) for w in listed] == [("on-push", 2, 3)]
    plain = agents.connection("plain")["token"]
    refused = api("PUT", "/v1/workflow-definitions", plain, {"content": WORKFLOW})
    assert refused.status == 403
    odd = WORKFLOW.replace("kind: schedule", "kind: carrier-pigeon")
    bad = api("PUT", "/v1/workflow-definitions", stack.admin_token, {"content": odd})
    assert bad.status == 400 and "Invalid triggers" in bad.body["error"]["message"]
    gone = api("DELETE", "/v1/workflow-definitions/on-push", stack.admin_token)
    assert gone.status == 200
    assert (
        _post(api, again["push"], body, _signed(stack, first["push"]["secret"], body)).status == 401
    )
    for run in _runs(api, stack.admin_token):
        wait_run(api, stack.admin_token, run["runId"])


def test_a_schedule_is_put_on_eventbridge_scheduler_which_invokes_the_tick(api, stack) -> None:
    import boto3

    define(api, stack.admin_token, CLAUDE_CODE)
    hourly = _register(api, stack.admin_token)["hourly"]
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    name = f"agentworks-{hourly['triggerId']}"
    # Issue 23: in the stack's own group (the grant names it; deleting the stack deletes it).
    group = stack.resources.schedule_groups["WorkflowScheduleGroup"]
    assert stack.settings.schedule_group == group != "default"
    put = scheduler.get_schedule(Name=name, GroupName=group)
    assert put["ScheduleExpression"] == "rate(1 hour)"
    assert put["Target"]["Arn"] == stack.settings.tick_function_arn
    assert put["Target"]["RoleArn"] == stack.settings.scheduler_role_arn
    # Issue 12: an invocation the Scheduler cannot deliver is retried, then kept for redrive.
    assert put["Target"]["RetryPolicy"] == {
        "MaximumRetryAttempts": limits.SCHEDULE_RETRY_ATTEMPTS,
        "MaximumEventAgeInSeconds": limits.SCHEDULE_EVENT_MAX_AGE_SECONDS,
    }
    dead_letters = stack.resources.queue_arns["TickDeadLetterQueue"]
    assert put["Target"]["DeadLetterConfig"] == {"Arn": dead_letters}
    event = json.loads(put["Target"]["Input"])
    assert event == {"trigger_id": hourly["triggerId"]}

    tick = load_handler("tick").handler
    assert tick(event, LambdaContext())["schedules_fired"] == 0  # not due yet
    # The Scheduler may invoke up to SCHEDULER_EARLY_MS early: that counts, earlier does not.
    early_s = limits.SCHEDULER_EARLY_MS // 1000
    stack.clock.advance(3600 - early_s - 1)
    assert tick(event, LambdaContext())["schedules_fired"] == 0
    stack.clock.advance(1)
    assert tick(event, LambdaContext())["schedules_fired"] == 1
    assert tick(event, LambdaContext())["schedules_fired"] == 0  # once per period
    assert _tick()["schedules_fired"] == 0  # the minute round agrees

    _register(api, stack.admin_token, WORKFLOW.replace("rate(1 hour)", "rate(2 hours)"))
    moved = scheduler.get_schedule(Name=name, GroupName=group)
    assert moved["ScheduleExpression"] == "rate(2 hours)"
    assert api("DELETE", "/v1/workflow-definitions/on-push", stack.admin_token).status == 200
    assert name not in [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]
    for run in _runs(api, stack.admin_token):
        wait_run(api, stack.admin_token, run["runId"])


def _github(secret: str, body: bytes, delivery: str) -> dict[str, str]:
    mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={mac}", "X-GitHub-Delivery": delivery}


def test_a_delivery_starts_one_run_however_often_it_is_sent(api, stack) -> None:
    """Issue 24: a signed request sent again within its window (a sender's retry, or a
    replay) gets the first answer — 202 with the same run id — and starts nothing more; a
    GitHub-signed body (no time in its signature) likewise, whatever X-GitHub-Delivery it
    carries, for as long as its delivery is kept."""
    define(api, stack.admin_token, CLAUDE_CODE)
    triggers = _register(api, stack.admin_token)
    push, github = triggers["push"], triggers["github"]
    body = json.dumps(PUSH).encode()
    signed = _signed(stack, push["secret"], body)
    answers = [_post(api, push, body, signed) for _ in range(3)]
    assert {(a.status, json.dumps(a.body)) for a in answers} == {(202, json.dumps(answers[0].body))}
    stack.clock.advance(limits.WEBHOOK_SIGNATURE_MAX_AGE_SECONDS)  # still inside the window
    late = _post(api, push, body, signed)
    assert (late.status, late.body) == (202, answers[0].body)
    assert [r["runId"] for r in _runs(api, stack.admin_token)] == [answers[0].body["runId"]]
    stack.clock.advance(1)  # past it: the signature itself is refused
    assert _post(api, push, body, signed).status == 401
    fresh = _post(api, push, body, _signed(stack, push["secret"], body))  # a new delivery
    assert fresh.status == 202 and fresh.body["runId"] != answers[0].body["runId"]

    hub = [_post(api, github, body, _github(github["secret"], body, f"d-{n}")) for n in range(3)]
    assert {(r.status, r.body["runId"]) for r in hub} == {(202, hub[0].body["runId"])}
    stack.clock.advance(limits.WEBHOOK_GITHUB_DELIVERY_SECONDS)
    # Remembered no longer (the record may outlive its TTL in DynamoDB: it counts as gone).
    again = _post(api, github, body, _github(github["secret"], body, "d-0"))
    assert again.status == 202 and again.body["runId"] != hub[0].body["runId"]
    runs = _runs(api, stack.admin_token)
    assert len(runs) == 4
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    assert {t["name"]: len(t["runs"]) for t in shown["triggers"]} == {
        "push": 2,
        "github": 2,
        "hourly": 0,
    }
    for run in runs:
        wait_run(api, stack.admin_token, run["runId"])


def test_a_signature_from_the_future_is_refused(api, stack) -> None:
    """Issue 24: a `t` more than the allowed skew ahead of the clock (250 s was accepted)
    would stretch the replay window; it is refused like a bad signature."""
    define(api, stack.admin_token, CLAUDE_CODE)
    push = _register(api, stack.admin_token)["push"]
    body = json.dumps(PUSH).encode()
    ahead = limits.WEBHOOK_SIGNATURE_MAX_AHEAD_SECONDS
    refused = _post(api, push, body, _signed(stack, push["secret"], body, age=-250))
    assert (refused.status, refused.body["error"]["code"]) == (401, "unauthenticated")
    assert (
        _post(api, push, body, _signed(stack, push["secret"], body, age=-ahead - 1)).status == 401
    )
    assert _runs(api, stack.admin_token) == []
    skewed = _post(api, push, body, _signed(stack, push["secret"], body, age=-ahead))
    assert skewed.status == 202
    wait_run(api, stack.admin_token, skewed.body["runId"])


def test_two_copies_of_a_delivery_at_once_start_one_run(api, stack, monkeypatch) -> None:
    """Two copies that both find no record (sent together) race on the delivery record,
    written in the transaction that creates the run: the loser answers with the winner's
    run and creates nothing."""
    from agentworks.workflows.registry_store import RegistryStore

    define(api, stack.admin_token, CLAUDE_CODE)
    push = _register(api, stack.admin_token)["push"]
    body = json.dumps(PUSH).encode()
    signed = _signed(stack, push["secret"], body)
    first = _post(api, push, body, signed)
    assert first.status == 202
    looked = RegistryStore.delivery
    misses = [None]

    def not_yet(self: Any, *args: Any) -> Any:  # the copy read before the first committed
        return misses.pop() if misses else looked(self, *args)

    monkeypatch.setattr(RegistryStore, "delivery", not_yet)
    second = _post(api, push, body, signed)
    assert not misses  # it did miss the record, and still answered the first run
    assert (second.status, second.body) == (202, first.body)
    assert [r["runId"] for r in _runs(api, stack.admin_token)] == [first.body["runId"]]
    wait_run(api, stack.admin_token, first.body["runId"])


def test_a_delivery_whose_run_could_not_start_is_started_by_the_retry(api, stack, monkeypatch):
    """A run recorded but not started (Step Functions refused it: 503) does not keep its
    delivery: the sender's retry of the same request starts the run, once."""
    from botocore.exceptions import ClientError

    define(api, stack.admin_token, CLAUDE_CODE)
    push = _register(api, stack.admin_token)["push"]
    body = json.dumps(PUSH).encode()
    signed = _signed(stack, push["secret"], body)
    executions = stack.services.workflows.runs._executions

    def refused(*_: Any, **__: Any) -> None:
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "x"}}, "Start")

    monkeypatch.setattr(executions, "start_named", refused)
    assert _post(api, push, body, signed).status == 503
    monkeypatch.undo()
    retried = _post(api, push, body, signed)
    assert retried.status == 202
    assert _post(api, push, body, signed).body == retried.body
    runs = {r["runId"]: r["status"] for r in _runs(api, stack.admin_token)}
    assert len(runs) == 2 and runs[retried.body["runId"]] != "failed"
    wait_run(api, stack.admin_token, retried.body["runId"])


def _with_webhooks(n: int) -> str:
    """WORKFLOW with `n` webhook triggers in place of its own three."""
    head, rest = WORKFLOW.split("triggers:\n", 1)
    hook = (
        "  - kind: webhook\n    name: hook-{}\n"
        "    variables: {{REF: ref, REPO: repository.full_name}}\n"
    )
    return (
        head
        + "triggers:\n"
        + "".join(hook.format(i) for i in range(n))
        + rest[rest.index("---\n") :]
    )


def test_a_workflow_holds_workflow_triggers_max_triggers_and_no_more(api, stack) -> None:
    """W11: WORKFLOW_TRIGGERS_MAX triggers register, each with a path that starts a run; one
    more is refused and the registration stays as it was."""
    define(api, stack.admin_token, CLAUDE_CODE)
    token = stack.admin_token
    triggers = _register(api, token, _with_webhooks(limits.WORKFLOW_TRIGGERS_MAX))
    assert len(triggers) == limits.WORKFLOW_TRIGGERS_MAX
    last = triggers[f"hook-{limits.WORKFLOW_TRIGGERS_MAX - 1}"]
    body = json.dumps(PUSH).encode()
    assert _post(api, last, body, _signed(stack, last["secret"], body)).status == 202

    past = _with_webhooks(limits.WORKFLOW_TRIGGERS_MAX + 1)
    refused = api("PUT", "/v1/workflow-definitions", token, {"content": past})
    assert refused.status == 400 and "triggers" in refused.body["error"]["message"]
    listed = api("GET", "/v1/workflow-definitions", token).body["workflows"]
    assert [(w["version"], w["triggers"]) for w in listed] == [(1, limits.WORKFLOW_TRIGGERS_MAX)]
    for run in _runs(api, token):
        wait_run(api, token, run["runId"])


def test_a_tick_fires_at_most_workflow_schedules_per_tick_schedules(api, stack, monkeypatch):
    """W11: one more due schedule than a tick fires: the tick fires WORKFLOW_SCHEDULES_PER_TICK,
    the next tick the last one, each once.

    The bound is lowered to 1 for speed: the tick reads `limits.WORKFLOW_SCHEDULES_PER_TICK`
    when it runs, so the rule under test is the same."""
    monkeypatch.setattr(limits, "WORKFLOW_SCHEDULES_PER_TICK", 1)
    define(api, stack.admin_token, CLAUDE_CODE)
    two = WORKFLOW.replace(
        "---\n## review",
        "  - kind: schedule\n    name: hourly-too\n    schedule: rate(1 hour)\n"
        "    input: {REF: main, REPO: acme/db}\n---\n## review",
    )
    _register(api, stack.admin_token, two)
    stack.clock.advance(3600)
    assert _tick()["schedules_fired"] == 1
    assert _tick()["schedules_fired"] == 1
    assert _tick()["schedules_fired"] == 0
    runs = _runs(api, stack.admin_token)
    assert len(runs) == 2
    for run in runs:
        wait_run(api, stack.admin_token, run["runId"])


def test_a_trigger_shows_its_latest_firings_and_the_list_its_latest_runs(
    api, stack, monkeypatch
) -> None:
    """W11: a trigger's view shows its latest WORKFLOW_TRIGGER_HISTORY firings, newest
    first; `workflow list` the latest WORKFLOW_RUNS_LISTED runs.

    Both are lowered to 2 for speed: each is read from `limits` when the view is asked for,
    so the rule under test is the same."""
    monkeypatch.setattr(limits, "WORKFLOW_TRIGGER_HISTORY", 2)
    monkeypatch.setattr(limits, "WORKFLOW_RUNS_LISTED", 2)
    define(api, stack.admin_token, CLAUDE_CODE)
    push = _register(api, stack.admin_token)["push"]
    fired = []
    for n in range(3):
        stack.clock.advance(1)
        body = json.dumps({**PUSH, "ref": f"release-{n}"}).encode()
        reply = _post(api, push, body, _signed(stack, push["secret"], body))
        assert reply.status == 202, reply.body
        fired.append(reply.body["runId"])
    shown = api("GET", "/v1/workflow-definitions/on-push", stack.admin_token).body
    [history] = [t["runs"] for t in shown["triggers"] if t["name"] == "push"]
    assert [r["runId"] for r in history] == fired[:0:-1]
    assert [r["runId"] for r in _runs(api, stack.admin_token)] == fired[:0:-1]
    for run_id in fired:
        wait_run(api, stack.admin_token, run_id)
