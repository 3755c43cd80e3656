"""`make bench` (python -m bench.run): measures, prints a table, writes bench/out/results.json.

Everything runs on in-process moto through the real handlers; nothing touches AWS.
docs/benchmarks.md explains each figure and the method.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

# Before boto3 or powertools load: a fake account, and no X-Ray daemon to talk to.
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentworks")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "AgentWorks")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

from moto import mock_aws

from bench import (
    a2a,
    bridge,
    cold_start,
    conversations,
    deploy,
    functions,
    mcp_tasks,
    mcp_tool_use,
    prices,
    push,
    relays,
    report,
    request_costs,
    scale,
    throughput,
    usage,
    wake,
    workflows,
)
from bench.history import measure as history_figures
from bench.inbox import inbox_figures
from bench.meter import Tally
from bench.stack import open_stack
from tests.support.clock import FakeClock

OUT = Path(__file__).resolve().parent / "out" / "results.json"
IMPORT_ROUNDS = 7

# Paths whose worst case is the headline figure (e.g. a send from either kind of party).
HEADLINES = {
    "send": ("send_named", "send_external"),
    "send_with_submission": ("send_named_with_submission", "send_external_with_submission"),
    "read": ("read_named", "read_external"),
}
RENAMED = {"read_named_seen_refresh": "read_seen_refresh"}


def _progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def _tally_figures(name: str, tally: Tally) -> dict[str, float]:
    return {
        f"{name}_ddb_requests": float(tally.total_requests),
        f"{name}_write_units": tally.billed_write_units,
        f"{name}_gsi_write_units": tally.gsi_write_units,
        f"{name}_read_units": tally.read_units,
    }


def capacity_figures(costs: request_costs.RequestCosts) -> tuple[dict[str, float], dict[str, str]]:
    results: dict[str, float] = {}
    details: dict[str, str] = {}
    paths = {RENAMED.get(k, k): v for k, v in costs.paths.items()}
    paths["authentication"] = costs.authentication
    for name, tally in paths.items():
        figures = _tally_figures(name, tally)
        results.update(figures)
        for metric in figures:
            details[metric] = tally.describe()
    for headline, variants in HEADLINES.items():
        for suffix in ("ddb_requests", "write_units", "gsi_write_units", "read_units"):
            values = [results[f"{v}_{suffix}"] for v in variants]
            results[f"{headline}_{suffix}"] = max(values)
            described = sorted({paths[v].describe() for v in variants})
            per_variant = ", ".join(
                f"{v.split('_')[1]} {_short(results[f'{v}_{suffix}'])}" for v in variants
            )
            details[f"{headline}_{suffix}"] = f"{' | '.join(described)} (worst of {per_variant})"
    results["idle_wait_requests"] = results["idle_wait_ddb_requests"]
    details["idle_wait_requests"] = details["idle_wait_ddb_requests"] + " (wait_seconds=25)"
    details["read_seen_refresh_ddb_requests"] += " (at most once a minute per name)"
    details["idle_wait_read_units"] = "reader on side b: one head read (META + newest) a poll"
    details["idle_wait_initiator_read_units"] = "reader on side a, unread messages on side b"
    details["send_busy_write_units"] += " (rate window ~full)"
    for handler, seconds in costs.durations.items():
        results[f"handler_ms_{handler}"] = seconds * 1000
        details[f"handler_ms_{handler}"] = "median in-process wall time, moto included"
    return results, details


def _short(value: float) -> str:
    return f"{value:g}"


def cost_figures(costs: request_costs.RequestCosts) -> dict[str, float]:
    workload = prices.Workload(
        send=costs.paths["send_named"],
        read_page=costs.paths["read_named"],
        authentication=costs.authentication,
        send_seconds=costs.durations["send"],
        read_seconds=costs.durations["read"],
        api_memory_mb=prices.memory_mb("ApiFunction"),
        page_size=request_costs.PAGE,
    )
    return prices.cost_per_million(workload)


def _ratio_key(handler: str) -> str:
    return "mcp_import_ratio_vs_boto3" if handler == "mcp" else f"import_ratio_{handler}"


def import_figures(seconds: dict[str, float]) -> dict[str, float]:
    boto3 = seconds["boto3"]
    results = {f"import_ms_{t}": s * 1000 for t, s in seconds.items()}
    for handler in cold_start.HANDLERS:
        results[_ratio_key(handler)] = seconds[handler] / boto3
    results["import_ratio_vs_boto3"] = max(
        results[_ratio_key(h)] for h in cold_start.HANDLERS if h != "mcp"
    )
    return results


def import_breakdown(results: dict[str, float]) -> list[str]:
    """Each function's ratio and where its import time goes, heaviest packages first."""
    lines = []
    for handler in cold_start.HANDLERS:
        parts = ", ".join(f"{p} {s * 1000:.0f} ms" for p, s in cold_start.heaviest_imports(handler))
        lines.append(f"  {handler} ({results[_ratio_key(handler)]:.2f}x): {parts}")
    return lines


def main() -> int:
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    started = time.perf_counter()
    results: dict[str, float] = {}
    details: dict[str, str] = {}
    with mock_aws():
        _progress("DynamoDB requests and capacity per path (fake clock)")
        costs = request_costs.measure(open_stack("bench-cap", FakeClock()))
        figures, details = capacity_figures(costs)
        results.update(figures)
        results.update(cost_figures(costs))
        _progress("wake latency (real clock, real poll interval)")
        results.update(wake.measure())
        _progress("push delivery: listener paths and the notifier, metered (fake clock)")
        push_figures = push.measure_costs(open_stack("bench-push", FakeClock()))
        results.update(push_figures)
        results.update(push.per_message(push_figures))
        results.update(push.idle_month(push_figures))
        _progress("usage counting: what the per-account counters add to sends and reads")
        results.update(usage.measure(open_stack("bench-usage", FakeClock())))
        results.update(usage.estimate_vs_measured(results, request_costs.PAGE))
        _progress("throughput: handlers vs raw boto3 on same-sized tables")
        results.update(throughput.measure())
        _progress("the local stack as it fills: sends and reads at 0, 10,000, 100,000 messages")
        results.update(scale.measure_rates())
    _progress("push wake latency over a local stack's WebSocket")
    results.update(push.measure_wake())
    _progress("bridge: duplicate turns with crashes injected at every point")
    results.update(bridge.measure())
    _progress("bridge: messages lost across the channel, the Stop hook and resumes")
    results.update(bridge.measure_routes())
    _progress("local restart with 100,000 stored messages (snapshot, start, crash replay)")
    results.update(scale.measure_restart())
    _progress("function calls on Step Functions (one-turn scripted call)")
    results.update(functions.measure())
    _progress("MCP tasks: tasks/get against the same call's status over HTTP")
    results.update(mcp_tasks.measure())
    _progress("A2A on the same calls: SendMessage and GetTask next to the HTTP API")
    results.update(a2a.measure())
    _progress("the a2a adapter: a call waiting for an external agent's task the tick reads")
    results.update(a2a.measure_adapter_wait())
    _progress("a request in a conversation with a Crew: send, the Crew's run, its reply")
    results.update(conversations.measure())
    _progress("the web Inbox on the local stack (page size, load with its first API call)")
    results.update(inbox_figures())
    _progress("workflow runs on Step Functions (2 stages × 3 scripted steps)")
    results.update(workflows.measure())
    results.update(history_figures())  # Step Functions history per execution (issue 23)
    _progress("one MCP tool call from a workflow step, against the MCP test server")
    results.update(mcp_tool_use.measure())
    _progress("relay runs on Step Functions (N durable steps vs N plain calls, own process)")
    relay_figures, relay_details = relays.measure()
    results.update(relay_figures)
    details.update(relay_details)
    deploy.add_figures(results, details)  # the template and layer as deployed (deploycheck)
    _progress("cold-start imports (fresh interpreters)")
    results.update(import_figures(cold_start.measure(IMPORT_ROUNDS)))
    details.update(
        {
            "cost_per_million_usd": "1M sends + 100k page reads, token checked on every request",
            "cost_sqs_per_million": "send + receive + delete, unbatched",
            "import_ratio_vs_boto3": "worst function but mcp",
            "function_call_state_transitions": "StateEntered events of one single-turn call",
            "conversation_round_trip_ddb_requests": "send + the Crew's run + one read page; "
            "token checks and status polls excluded",
            "conversation_round_trip_write_units": "table and index units of all their writes",
            "conversation_round_trip_state_transitions": "StateEntered events of the run",
            "inbox_page_bytes": "HTML + JS + CSS as served",
            "inbox_load_ms": "median: the three files and the first GET /v1/conversations",
            "function_call_ddb_requests": "admission + execution; token check and polls excluded",
            "function_call_latency_s": f"median of {functions.CALLS}, accept to terminal status",
            "mcp_tasks_get_ddb_requests": "one tasks/get, token check included (worst of 2)",
            "call_status_http_ddb_requests": "GET /v1/calls/{id} of the same call, same way",
            "mcp_tasks_get_extra_ddb_requests": "tasks/get minus the HTTP status, same call",
            "workflow_2x3_wall_s": f"median of {workflows.RUNS}, start to terminal status",
            "workflow_overhead_transitions_per_step": "(transitions - steps) / steps, 2×3 run",
            "workflow_transitions_per_step": "added by one more step in each stage",
            "workflow_transitions_per_stage": "added by one more stage (its steps' own aside)",
            "workflow_ddb_requests_per_step": "added by one more step; token check excluded",
            "a2a_send_ddb_requests": "SendMessage (returnImmediately), token check included",
            "http_call_ddb_requests": "POST /v1/calls of the same function, token check included",
            "a2a_get_task_ddb_requests": "GetTask of a completed task, token check included",
            "http_call_status_ddb_requests": "GET /v1/calls/{id} of the same, token check included",
            "a2a_task_state_transitions": "StateEntered events of the task's call",
            "a2a_adapter_task_state_transitions": "a call whose A2A agent's task outlasted "
            "its turn: StateEntered events in all",
            "a2a_adapter_wait_state_transitions": "…entered while the tick read the task 3 times",
            "a2a_adapter_tick_read_ddb_requests": "one tick's read of a waiting task, over an "
            "idle tick",
            "mcp_call_ddb_requests": "a step calling echo over one that only answers",
            "mcp_call_state_transitions": "the same difference in StateEntered events",
            "mcp_call_secret_reads": "Secrets Manager GetSecretValue per call",
            "mcp_call_server_ms": f"median of {mcp_tool_use.ROUNDS}, the bare MCP client call",
            "mcp_call_recorded_ms": "median duration_ms the step records for the call",
            "mcp_call_added_latency_ms": "recorded over bare: connection, item, secret, checks",
            "mcp_call_step_wall_delta_ms": "step wall time with the call over without (noisy)",
            "import_ms_boto3": f"median of {IMPORT_ROUNDS} fresh interpreters",
            "wake_latency_s": f"median of 5, send {wake.SEND_AFTER_S} s into the wait",
            "wake_latency_max_s": "worst, sends swept across one poll interval",
            "push_wake_latency_s": f"median of {push.ROUNDS}, send start to notice on the socket",
            "push_idle_agent_usd_per_month": "connection-minutes, 9 min pings, 2 h reconnects",
            "long_poll_idle_agent_usd_per_month": "a 25 s long-poll held all month (512 MB)",
            "push_cost_per_million_messages_usd": "notifier, one invocation per message",
            "usage_extra_requests_per_send": "usage items the send's API request writes",
            "usage_write_units_per_send": "notifier's usage writes, one invocation per send",
            "usage_write_units_per_send_batched": f"{usage.SENDS} sends in one stream batch",
            "usage_extra_requests_per_read_page": "tallied in memory, written once a minute",
            "usage_tally_flush_requests": "the first page after the minute: ADDs it writes",
            "usage_estimate_vs_measured": "GET /v1/usage's model / cost_per_million_usd",
            "bridge_duplicate_turns": f"{bridge.MESSAGES} messages, restarts at random points",
            "bridge_messages_lost_across_routes": "channel shown/dropped/acked, Stop, resumes",
            "bridge_channel_shown_then_stop_offered": "shown on the channel, not acknowledged",
            "throughput_ratio_vs_boto3": "send+read via handlers / put_item+query",
            "throughput_ratio_vs_boto3_same_requests": "/ the handlers' own requests via boto3",
            "local_sends_per_s_at_100000": f"{scale.ITERATIONS} sends via the handlers",
            "local_http_sends_per_s_at_100000": "over HTTP, one keep-alive client, 100k stored",
            "local_start_serving_s_at_100000": "`agentworks dev` start to serving, 100k stored",
            "local_start_first_read_s_at_100000": "to a first send and mailbox read answered",
            "local_snapshot_seconds_at_100000": "the clean stop's fold (writes wait meanwhile)",
            "local_crash_replay_s_2000_writes": "restore: 100k snapshot + 2,000 journaled",
        }
    )
    print()
    print(report.table(results, details))
    print("\nWrite units by item (transactional writes count double):")
    for name in (
        "send_named",
        "send_named_with_submission",
        "send_new_hour",
        "first_contact",
        "register",
    ):
        print(f"  {name}: {costs.paths[name].describe_writes()}")
    missed = report.misses(results)
    print("\nWhere import time goes (self time per package, python -X importtime):")
    print("\n".join(import_breakdown(results)))
    report.write_json(results, OUT)
    print(f"\n{len(missed)} target(s) missed: {', '.join(missed) or 'none'}")
    print(
        f"wrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT} "
        f"in {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
