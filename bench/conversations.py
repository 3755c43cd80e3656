"""A request in an open conversation with a Crew, end to end (issue 11's measure): an agent
sends a request to a Crew with messaging on, the Crew's run (a Step Functions execution of
the real step runner on moto's executor) answers it with a reply, and the agent reads the
reply. Counted: every DynamoDB request of the send, the run and the one read page (the
asker's status polls are its own choice and left out), their write units, the states the
run entered, and its Step Functions requests."""

from __future__ import annotations

import statistics
import time
from typing import Any

import boto3
from moto import mock_aws

from bench.meter import Meter, Tally
from bench.stack import Requests, executing_stack

ROUNDS = 5
CREW = {
    "name": "bench-asked",
    "instructions": "Answer questions about clauses.",
    "messaging": True,
    "adapter": {
        "type": "scripted",
        "rules": [{"when": "clause (\\d+)", "reply": "Clause {match.1} covers termination."}],
    },
}
ANSWERED = {"answered", "declined", "couldnt_complete", "expired", "cancelled"}


def _request_state(api: Any, token: str, inbox: str, message_id: str) -> str:
    listed = api("GET", "/v1/requests", token, query={"inbox_id": inbox}).body
    return str(next(r["state"] for r in listed["requests"] if r["message_id"] == message_id))


def measure() -> dict[str, Any]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        requests = Requests()
        stack = executing_stack("bench-conv", requests)
        meter = Meter(stack.dynamodb, boto3.client("dynamodb", region_name="us-east-1"))
        api, admin, sfn = stack.api, stack.admin_token, stack.stepfunctions
        assert api("POST", "/v1/crews", admin, CREW).status == 201
        asker = api("POST", "/v1/connections", admin, {"name": "asker"}).body["token"]
        opened = api("POST", "/v1/messages", asker, {"target": "crew:bench-asked", "message": "hi"})
        conversation = opened.body["inbox_id"]  # the rounds ask in one open conversation
        ddb, units, transitions, sfn_calls, latencies = [], [], [], [], []
        last_writes, after = "", "0"
        for n in range(ROUNDS):
            before, executed = requests.counts.copy(), requests.execution.copy()
            tally = Tally()
            started = time.perf_counter()
            with meter.recording(tally):
                body = {"inbox_id": conversation, "kind": "request", "message": f"clause {n}?"}
                sent = api("POST", "/v1/messages", asker, body)
                assert sent.status == 201, sent.body
            admission = requests.counts - before - (requests.execution - executed)
            inbox, message_id = sent.body["inbox_id"], sent.body["message_id"]
            with meter.recording(tally):  # the run's writes (its thread) while we wait
                while _request_state(api, asker, inbox, message_id) not in ANSWERED:
                    time.sleep(0.005)
            latencies.append(time.perf_counter() - started)
            read_before = requests.counts.copy()
            page = api("GET", "/v1/messages", asker, query={"inbox_id": inbox, "after": after})
            reply = page.body["messages"][-1]
            after = page.body["next_cursor"]
            assert reply["kind"] == "reply" and reply["in_reply_to"] == message_id, reply
            read = requests.counts - read_before
            run = requests.execution - executed
            spent = admission + run + read
            # One GetItem per HTTP request is authentication's (the send's and the read's).
            ddb.append(sum(v for k, v in spent.items() if k.startswith("dynamodb:")) - 2)
            sfn_calls.append(sum(v for k, v in spent.items() if k.startswith("stepfunctions:")))
            units.append(tally.billed_write_units)
            last_writes = tally.describe_writes()
            executions = sfn.list_executions(stateMachineArn=_call_machine(sfn))["executions"]
            newest = max(executions, key=lambda e: e["startDate"])
            history = sfn.get_execution_history(executionArn=newest["executionArn"])["events"]
            transitions.append(sum(1 for e in history if e["type"].endswith("StateEntered")))
    return {
        "conversation_round_trip_ddb_requests": float(statistics.median(ddb)),
        "conversation_round_trip_write_units": float(statistics.median(units)),
        "conversation_round_trip_state_transitions": float(statistics.median(transitions)),
        "conversation_round_trip_sfn_requests": float(statistics.median(sfn_calls)),
        "conversation_round_trip_latency_s": statistics.median(latencies),
        "conversation_round_trip_writes": last_writes,
    }


def _call_machine(sfn: Any) -> str:
    machines = sfn.list_state_machines()["stateMachines"]
    return str(next(m["stateMachineArn"] for m in machines if "FunctionCall" in m["name"]))
