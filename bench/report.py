"""Targets, the printed table and results.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    limit: float
    unit: str = ""
    at_least: bool = False  # a floor (a rate) rather than a ceiling (a cost)

    def met(self, value: float) -> bool:
        if self.at_least:
            return value >= self.limit - 1e-9
        return value <= self.limit + 1e-9

    def __str__(self) -> str:
        return f"{'>=' if self.at_least else '<='} {self.limit:g}{self.unit}"


# From the issue: what a send, a read, a long-poll, the bill and a cold start may cost.
TARGETS: dict[str, Target] = {
    "send_ddb_requests": Target(2),
    "send_write_units": Target(6),
    "read_ddb_requests": Target(2),  # 1 Query + at most 1 GetItem/BatchGetItem
    "mailbox_read_ddb_requests": Target(2),  # same shape as an inbox read
    "idle_wait_requests": Target(30),
    "wake_latency_s": Target(1.0, " s"),
    "cost_ratio_vs_sqs": Target(2.5, "x"),
    # Issue 13: every function but mcp at most 1.5× `import boto3`; mcp (SnapStart) 5.5×.
    "import_ratio_vs_boto3": Target(1.5, "x"),
    "import_ratio_api": Target(1.5, "x"),
    "import_ratio_tick": Target(1.5, "x"),
    "mcp_import_ratio_vs_boto3": Target(5.5, "x"),
    "function_call_state_transitions": Target(8),
    # Issue 8: the engine's own transitions per step (a step's task aside).
    "workflow_overhead_transitions_per_step": Target(5),
    # Issue 23: every execution's history far inside the 25,000-event quota; a crew step
    # enters the same few states however long its call runs.
    "history_events_worst_execution": Target(20_000),
    "workflow_transitions_per_crew_step_quick": Target(5),
    "workflow_transitions_per_crew_step_waiting": Target(5),
    # Issue 9: a relay run's transitions do not grow with its durable steps; a step is its
    # two API calls (start, finish), each two GetItems of authentication and one write.
    "relay_run_state_transitions": Target(3),
    "relay_transitions_per_step": Target(0),
    "relay_step_ddb_requests": Target(6),
    # Issue 28: a step's MCP tool call happens inside its turn (no state of its own); it
    # reads the caller's connection and the server's item and counts itself on the run.
    "mcp_call_state_transitions": Target(0),
    "mcp_call_ddb_requests": Target(3),
    # Issue 30 §3: a task is the call's record, read as its status is: tasks/get costs what
    # GET /v1/calls/{id} costs.
    "mcp_tasks_get_extra_ddb_requests": Target(0),
    # Issue 30: an A2A task is the call (the same requests as POST and GET /v1/calls, the
    # same transitions as function_call_state_transitions).
    "a2a_send_ddb_requests": Target(3),
    "a2a_get_task_ddb_requests": Target(2),
    "a2a_task_state_transitions": Target(8),
    # §2: a call whose external task outlasts its turn waits on a task token: no state is
    # entered while the tick reads the task (Turn, Route, AwaitTask, Turn, Route, Finish).
    "a2a_adapter_wait_state_transitions": Target(0),
    "a2a_adapter_task_state_transitions": Target(6),
    # The local stack as it fills (issue 7): speed that does not fall with size.
    # Sends through the handlers: in process (handlers on moto), and over HTTP through a
    # running `agentworks dev` (gateway, handlers, the journaled endpoint), as agents see it.
    "local_sends_per_s_at_100000": Target(100, "/s", at_least=True),
    "local_http_sends_per_s_at_100000": Target(100, "/s", at_least=True),
    "local_sends_ratio_100000_vs_0": Target(0.5, "x", at_least=True),
    "local_http_sends_ratio_100000_vs_0": Target(0.5, "x", at_least=True),
    "local_reads_ratio_100000_vs_0": Target(0.5, "x", at_least=True),
    "local_start_first_read_s_at_100000": Target(10, " s"),
    # Issue 10: a send wakes a listener over the local WebSocket; an attached agent idles
    # on connection-minutes, not on a Lambda held open.
    "push_wake_latency_s": Target(0.2, " s"),
    "push_idle_agent_usd_per_month": Target(0.10, " USD"),
    "bridge_duplicate_turns": Target(0),
    # Issue 25: no route loses a message (a channel event Claude dropped goes by the Stop).
    "bridge_messages_lost_across_routes": Target(0),
    "bridge_stop_duplicate_turns_across_routes": Target(0),
    # Issue 23: CloudFormation, IAM and Lambda quotas a deploy meets (deploycheck.limits).
    "deploy_resources": Target(500),
    "deploy_largest_role_policy_chars": Target(10_240),
    "deploy_layer_zip_bytes": Target(52_428_800),
    # Issue 12: usage counters add no request to a send, and at most one write unit.
    "usage_extra_requests_per_send": Target(0),
    "usage_write_units_per_send": Target(1),
}

# Printed in this order; anything else measured goes to results.json only.
SHOWN = (
    "send_ddb_requests",
    "send_write_units",
    "send_read_units",
    "send_with_submission_ddb_requests",
    "send_with_submission_write_units",
    "send_busy_write_units",
    "send_named_without_agent_name_ddb_requests",
    "send_new_hour_ddb_requests",
    "send_new_hour_write_units",
    "first_contact_ddb_requests",
    "first_contact_write_units",
    "first_contact_gsi_write_units",
    "read_ddb_requests",
    "read_read_units",
    "read_seen_refresh_ddb_requests",
    "mailbox_read_ddb_requests",
    "mailbox_read_read_units",
    "register_ddb_requests",
    "register_write_units",
    "authentication_ddb_requests",
    "authentication_read_units",
    "idle_wait_requests",
    "idle_wait_read_units",
    "idle_wait_initiator_read_units",
    "wake_latency_s",
    "wake_latency_max_s",
    "push_wake_latency_s",
    "push_wake_latency_max_s",
    "push_idle_agent_usd_per_month",
    "long_poll_idle_agent_usd_per_month",
    "push_cost_per_million_messages_usd",
    "push_notify_ddb_requests",
    "usage_send_ddb_requests",
    "usage_extra_requests_per_send",
    "usage_write_units_per_send",
    "usage_write_units_per_send_batched",
    "usage_notifier_requests_per_send",
    "usage_extra_requests_per_read_page",
    "usage_write_units_per_read_page",
    "usage_tally_flush_requests",
    "usage_estimate_per_million_usd",
    "usage_estimate_vs_measured",
    "bridge_duplicate_turns",
    "bridge_crashes_injected",
    "bridge_messages_lost_across_routes",
    "bridge_stop_duplicate_turns_across_routes",
    "bridge_channel_shown_then_stop_offered",
    "handler_ms_send",
    "handler_ms_read",
    "handler_ms_authentication",
    "cost_apigw_per_million",
    "cost_lambda_per_million",
    "cost_dynamodb_per_million",
    "cost_per_million_usd",
    "cost_sqs_per_million",
    "cost_ratio_vs_sqs",
    "function_call_state_transitions",
    "conversation_round_trip_ddb_requests",
    "conversation_round_trip_write_units",
    "conversation_round_trip_state_transitions",
    "conversation_round_trip_latency_s",
    "inbox_page_bytes",
    "inbox_load_ms",
    "function_call_ddb_requests",
    "function_call_sfn_requests",
    "function_call_latency_s",
    "mcp_tasks_get_ddb_requests",
    "call_status_http_ddb_requests",
    "mcp_tasks_get_extra_ddb_requests",
    "workflow_2x3_wall_s",
    "workflow_2x3_state_transitions",
    "workflow_2x3_ddb_requests",
    "workflow_transitions_per_step",
    "workflow_overhead_transitions_per_step",
    "workflow_transitions_per_stage",
    "workflow_ddb_requests_per_step",
    "workflow_ddb_requests_per_stage",
    "history_events_crew_step_waiting_6h_run",
    "history_events_function_call_max_turns",
    "history_events_pipeline_1000x10_parent",
    "history_events_pipeline_1000x10_per_item",
    "history_events_relay_run_max_attempts",
    "history_events_run_100_crew_steps_worst",
    "history_events_worst_execution",
    "workflow_transitions_per_crew_step_quick",
    "workflow_transitions_per_crew_step_waiting",
    "relay_run_state_transitions",
    "relay_transitions_per_step",
    "relay_1_steps_ddb_requests",
    "relay_5_steps_ddb_requests",
    "relay_10_steps_ddb_requests",
    "relay_run_ddb_requests_no_steps",
    "relay_step_ddb_requests",
    "relay_step_overhead_ms",
    "a2a_send_ddb_requests",
    "http_call_ddb_requests",
    "a2a_get_task_ddb_requests",
    "http_call_status_ddb_requests",
    "a2a_task_state_transitions",
    "a2a_adapter_task_state_transitions",
    "a2a_adapter_wait_state_transitions",
    "a2a_adapter_tick_read_ddb_requests",
    "mcp_call_ddb_requests",
    "mcp_call_state_transitions",
    "mcp_call_secret_reads",
    "mcp_call_server_ms",
    "mcp_call_recorded_ms",
    "mcp_call_added_latency_ms",
    "mcp_call_step_wall_delta_ms",
    "relay_10_steps_wall_s",
    "relay_10_plain_wall_s",
    "import_ms_boto3",
    "import_ratio_api",
    "import_ratio_tick",
    "import_ratio_step_runner",
    "import_ratio_workflow_runner",
    "import_ratio_relay_runner",
    "import_ratio_relay_code",
    "import_ratio_vs_boto3",
    "mcp_import_ratio_vs_boto3",
    "throughput_handlers_msgs_per_s",
    "throughput_boto3_msgs_per_s",
    "throughput_ratio_vs_boto3",
    "throughput_ratio_vs_boto3_same_requests",
    "throughput_table_items",
    "local_sends_per_s_at_0",
    "local_sends_per_s_at_10000",
    "local_sends_per_s_at_100000",
    "local_sends_ratio_100000_vs_0",
    "local_reads_per_s_at_0",
    "local_reads_per_s_at_10000",
    "local_reads_per_s_at_100000",
    "local_reads_ratio_100000_vs_0",
    "local_first_read_s_at_100000",
    "local_http_sends_per_s_at_0",
    "local_http_sends_per_s_at_100000",
    "local_http_sends_ratio_100000_vs_0",
    "local_http_reads_per_s_at_0",
    "local_http_reads_per_s_at_100000",
    "local_start_serving_s_at_0",
    "local_start_first_read_s_at_0",
    "local_start_serving_s_at_100000",
    "local_start_first_read_s_at_100000",
    "local_snapshot_seconds_at_100000",
    "local_snapshot_mb_at_100000",
    "local_crash_replay_s_2000_writes",
    "deploy_resources",
    "deploy_template_bytes",
    "deploy_translated_bytes",
    "deploy_largest_role_policy_chars",
    "deploy_layer_zip_bytes",
    "deploy_layer_unzipped_bytes",
)


def _format(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.2f}"


def verdict(metric: str, value: float) -> str:
    target = TARGETS.get(metric)
    if target is None:
        return ""
    return "ok" if target.met(value) else "MISS"


def table(results: dict[str, float], details: dict[str, str]) -> str:
    """metric | value | target | verdict | what was measured."""
    rows = [("metric", "value", "target", "verdict", "detail")]
    for metric in SHOWN:
        if metric not in results:
            continue
        value = results[metric]
        target = TARGETS.get(metric)
        rows.append(
            (
                metric,
                _format(value),
                str(target) if target else "-",
                verdict(metric, value),
                details.get(metric, ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, row in enumerate(rows):
        cells = [
            row[0].ljust(widths[0]),
            row[1].rjust(widths[1]),
            row[2].ljust(widths[2]),
            row[3].ljust(widths[3]),
            row[4],
        ]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def misses(results: dict[str, float]) -> list[str]:
    return [m for m in TARGETS if m in results and verdict(m, results[m]) == "MISS"]


def write_json(results: dict[str, float], path: Path) -> None:
    """A flat object: metric name -> number."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flat = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in sorted(results.items())}
    path.write_text(json.dumps(flat, indent=2) + "\n")
