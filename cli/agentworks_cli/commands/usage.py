"""`agentworks usage [--account ID] [--days N]`: the account's usage per UTC day and its
estimated cost at list prices (issue 12; an admin connection)."""

from __future__ import annotations

import argparse
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.commands.formatting import one_line
from agentworks_cli.commands.session import Session, add_action

# (column, field) of the daily table, in the order shown.
COLUMNS = (
    ("DAY", "day"),
    ("SENT", "messages_sent"),
    ("READ", "messages_read"),
    ("CALLS", "function_calls"),
    ("TRANSITIONS", "state_transitions"),
    ("STORED", "stored_bytes"),
    ("PUSH_MIN", "push_minutes"),
    ("NOTICES", "push_notices"),
    ("MCP_CALLS", "mcp_tool_calls"),
    ("RELAY_MCP", "relay_mcp_tool_calls"),
    ("EST_USD", "estimated_cost_usd"),
)


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    usage = add_action(
        commands,
        common,
        "usage",
        run_usage,
        "the account's usage per day and its estimated cost (admin)",
        description="Messages sent and read, function calls, state transitions, stored bytes "
        "and push minutes per UTC day, with a cost estimated from AWS list prices.",
    )
    usage.add_argument(
        "--account", metavar="ACCOUNT_ID", help="the account (default: the config's own)"
    )
    usage.add_argument(
        "--days", type=int, metavar="N", help="today and the N-1 days before it (default 7)"
    )


def _size(n: float) -> str:
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KB", "MB"):
        n /= 1024
        if n < 1024:
            return f"{n:.1f} {unit}"
    return f"{n / 1024:.1f} GB"


def _cell(name: str, value: Any) -> str:
    if name == "stored_bytes":
        return _size(float(value or 0))
    if name == "estimated_cost_usd":
        return f"{float(value or 0):.4f}"
    return one_line(value)


def run_usage(session: Session) -> int:
    args = session.args
    query = {"account": args.account, "days": args.days}
    report = session.call("GET", "/v1/usage", query=query, shape=shapes.USAGE)
    return session.show(report, _print_usage)


def _print_usage(session: Session, report: dict[str, Any]) -> None:
    session.out(
        f"usage of {one_line(report['account_id'])}, {report['first_day']} to "
        f"{report['last_day']} (UTC days)"
    )
    rows = [[_cell(field, day.get(field)) for _, field in COLUMNS] for day in report["days"]]
    total = {**report["total"], "day": "total"}
    total["estimated_cost_usd"] = report["estimated_cost"]["total_usd"]
    rows.append([_cell(field, total.get(field)) for _, field in COLUMNS])
    session.out_table([column for column, _ in COLUMNS], rows)
    cost = report["estimated_cost"]
    parts = ", ".join(
        f"{label} {float(cost[key]):.4f}"
        for label, key in (
            ("API Gateway", "api_gateway_usd"),
            ("Lambda", "lambda_usd"),
            ("DynamoDB", "dynamodb_usd"),
            ("Step Functions", "step_functions_usd"),
            ("storage", "storage_usd"),
        )
    )
    session.out(f"estimated cost: {float(cost['total_usd']):.4f} USD ({parts})")
    session.out(one_line(report["prices"]))
