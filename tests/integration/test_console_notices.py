"""The web console's notices on the push channel (issue 29, C5): a page that follows the
account's runs (`$connect ?console=runs`, by token or by the session cookie from the pages'
own Origin) hears, through the work table's real stream records, that a function call or a
workflow run changed — its id only, one notice per account and batch — and another account's
console hears nothing. Following needs a scope that reads runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentworks import limits
from agentworks.push.run_notices import changed_runs, run_notice
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.test_push_listeners import _connect, _listener_items, _notices
from tests.integration.test_workflow_runs import EXAMPLES
from tests.support.handlers import LambdaContext, load_handler
from tests.support.streams import StreamReader


class WorkStream(StreamReader):
    """The work table's stream, handed to the notifier on demand."""

    def __init__(self, stack: Any) -> None:
        super().__init__(stack.client, stack.settings.work_table)

    def deliver(self, keep: Any = None) -> dict:
        records = [r for r in self.records() if keep is None or keep(r)]
        return load_handler("notifier").handler({"Records": records}, LambdaContext())


def test_c5_a_console_hears_its_accounts_call_change_and_no_other(api, stack, agents):
    work = WorkStream(stack)
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    mine, status, body = _connect(stack.admin_token, console="runs")
    assert (status, body) == (200, {"type": "listening"})
    stranger = stack.services.identity.bootstrap("elsewhere").token
    theirs, status, _ = _connect(stranger, console="runs")
    assert status == 200
    call = {"target": "crew:contracts", "function": "summarize", "args": {"text": "t"}}
    call_id = api("POST", "/v1/calls", caller, call).body["call_id"]
    wait_for(api, caller, call_id, {"succeeded"})
    report = work.deliver()
    assert report["posted"] == 1  # one notice for the batch, to the one console listening
    [notice] = _notices(mine)
    assert notice == {"type": "runs", "run_ids": [call_id], "more": False}
    assert _notices(theirs) == []


def test_c5_a_workflow_steps_change_is_its_runs_even_without_the_runs_record(api, stack):
    """A step's item does not name its account: the notifier reads the run's record for it.
    Only the run's step records are handed over here."""
    from tests.integration.workflow_support import CLAUDE_CODE, define, start, wait_run

    work = WorkStream(stack)
    ws_id, status, _ = _connect(stack.admin_token, console="runs")
    assert status == 200
    define(api, stack.admin_token, CLAUDE_CODE)
    seed = json.loads((EXAMPLES / "review-then-fix.json").read_text())
    run_id = start(api, stack.admin_token, seed)
    assert wait_run(api, stack.admin_token, run_id)["status"] == "succeeded"

    def steps_only(record: dict) -> bool:
        keys = record["dynamodb"]["Keys"]
        return keys["pk"]["S"] == f"WFRUN#{run_id}" and keys["sk"]["S"].startswith("STEP#")

    assert work.deliver(steps_only)["posted"] == 1
    assert _notices(ws_id) == [{"type": "runs", "run_ids": [run_id], "more": False}]


def test_c5_following_the_console_needs_a_scope_that_reads_runs(agents):
    reader = agents.connection("reader", scopes=["messages:read"])["token"]
    _, status, body = _connect(reader, console="runs")
    assert (status, body["error"]["code"]) == (403, "forbidden")
    caller = agents.connection("caller", scopes=["functions:read"])["token"]
    assert _connect(caller, console="runs")[1] == 200
    _, status, body = _connect(caller, console="everything")
    assert (status, body["error"]["field"]) == (400, "console")


def test_c5_a_notice_names_at_most_run_notice_ids_max_runs():
    at = [f"call_{n:026d}" for n in range(limits.RUN_NOTICE_IDS_MAX)]
    assert json.loads(run_notice(at)) == {"type": "runs", "run_ids": at, "more": False}
    past = [*at, "call_" + "Z" * 26]
    assert json.loads(run_notice(past)) == {"type": "runs", "run_ids": at, "more": True}


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ({"pk": "CALL#call_1", "sk": "META", "account_id": "acc"}, ("call_1", "acc")),
        ({"pk": "WFRUN#wfrun_1", "sk": "STEP#000#00#00"}, ("wfrun_1", None)),
        ({"pk": "RRUN#rrun_1", "sk": "RUN", "record": '{"account_id": "acc"}'}, ("rrun_1", "acc")),
        ({"pk": "CALLS#acc", "sk": "0001#call_1"}, None),  # the list, not a run
        ({"pk": "CALL#", "sk": "META"}, None),
    ],
)
def test_c5_which_work_items_are_runs(image: dict, expected: tuple | None):
    record = {
        "eventName": "MODIFY",
        "dynamodb": {"NewImage": {k: {"S": v} for k, v in image.items()}},
    }
    found = changed_runs([record])
    assert [(r.run_id, r.account_id) for r in found] == ([expected] if expected else [])
    assert changed_runs([{**record, "eventName": "REMOVE"}]) == []


def test_c5_a_cookie_signed_console_hears_nothing_once_its_session_has_ended(
    api, stack, agents, monkeypatch
):
    """A page's listener, opened with the session cookie from the pages' origin, lives no
    longer than its session (WEB_SESSION_SECONDS): notified a second before the end, not
    at it. Its connected time counts from when it opened."""
    from tests.integration.test_push_listeners import _push, _ws_event
    from tests.integration.test_web_inbox import cookie_header, sign_in

    work = WorkStream(stack)
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    cookie = cookie_header(sign_in(api, stack.admin_token))
    monkeypatch.setattr(stack.services.push, "pages_url", lambda: "https://api.example.com/")
    event = _ws_event("$connect", "wspage0000000001", None, console="runs")
    event["headers"] |= {"cookie": cookie[1], "origin": "https://api.example.com"}
    opened = int(stack.clock.now())
    assert _push(event) == (200, {"type": "listening"})
    call = {"target": "crew:contracts", "function": "summarize", "args": {"text": "t"}}

    def a_call_changes() -> int:
        call_id = api("POST", "/v1/calls", stack.admin_token, call).body["call_id"]
        wait_for(api, stack.admin_token, call_id, {"succeeded"})
        return int(work.deliver()["posted"])

    [item] = [i for i in _listener_items(stack) if i["sk"] == "wspage0000000001"]
    assert (item["expires_ttl"], item["opened_at"]) == (opened + limits.WEB_SESSION_SECONDS, opened)
    stack.clock.advance(limits.WEB_SESSION_SECONDS - 1)
    assert a_call_changes() == 1
    stack.clock.advance(1)
    assert a_call_changes() == 0
