"""Usage counting (issue 12): what keeping per-account counters adds to the paths it
counts, through the real handlers with the meter on.

- Sends: the API function's requests for a send (the usage counters add none: they are
  counted from the messages table's stream), and the write units the notifier spends on
  them, one invocation per send (a quiet stream, the worst case) and all in one batch.
- Read pages: none of their own (tallied in memory, agentworks.usage.tally); the first page
  after the tally's minute writes it, one `ADD` per account-day-shard pending.
- The estimate: GET /v1/usage's cost model for the bench's million messages, against the
  bench's measured cost of the same (`usage_estimate_vs_measured`).
"""

from __future__ import annotations

import statistics
from typing import Any

from agentworks import limits
from bench.meter import Tally
from bench.request_costs import BODY, SEND_SPACING_S
from bench.stack import Stack, quiet
from tests.support.clock import FakeClock
from tests.support.handlers import LambdaContext, load_handler
from tests.support.streams import StreamReader

SENDS = 20
USAGE = "USAGE#"


def _notify(stack: Stack, stream: StreamReader) -> Tally:
    tally = Tally()
    with stack.meter.recording(tally), quiet():
        load_handler("notifier").handler({"Records": stream.records()}, LambdaContext())
    return tally


def _usage_requests(tally: Tally, work_table: str) -> int:
    """Requests that wrote usage items: UpdateItems of the work table (a transaction that
    also adds usage is a request of its own path, not one usage adds)."""
    return tally.by_table[("UpdateItem", work_table)] if tally.items_written(USAGE) else 0


def measure(stack: Stack) -> dict[str, float]:
    """Requires a FakeClock stack (activated): `SENDS` sends of 1 KB into one inbox."""
    assert isinstance(stack.clock, FakeClock)
    work = stack.settings.work_table
    admin = stack.admin_token
    sender = stack.call("POST", "/v1/connections", admin, {"name": "u-sender"}).body["token"]
    reader = stack.call("POST", "/v1/connections", admin, {"name": "u-reader"}).body["token"]
    stack.call("POST", "/v1/agents", reader, {"agent_name": "u-reader"})
    stream = StreamReader(stack.oracle, stack.settings.messages_table)
    first = {"target": "agent:u-reader", "message": BODY}
    inbox = stack.call("POST", "/v1/messages", sender, first).body["inbox_id"]
    _notify(stack, stream)

    send_requests, send_usage_requests, quiet_units, quiet_requests = [], 0, 0, 0
    for _ in range(SENDS):  # one notifier invocation per send: each writes on its own
        stack.clock.advance(SEND_SPACING_S)
        body = {"inbox_id": inbox, "message": BODY}
        sent = stack.call("POST", "/v1/messages", sender, body, metered=True)
        send_requests.append(sent.api.total_requests)
        send_usage_requests += sent.api.items_written(USAGE)
        notified = _notify(stack, stream)
        quiet_units += notified.units_written(USAGE)
        quiet_requests += _usage_requests(notified, work)
    for _ in range(SENDS):  # a busy stream: every send in one batch
        stack.clock.advance(SEND_SPACING_S)
        stack.call("POST", "/v1/messages", sender, {"inbox_id": inbox, "message": BODY})
    batched = _notify(stack, stream)

    mailbox = stack.call("GET", "/v1/messages", reader, query={"agent_name": "u-reader"}).body
    own_inbox = mailbox["messages"][0]["reply_address"]
    page = stack.call(
        "GET", "/v1/messages", reader, query={"inbox_id": own_inbox, "limit": 10}, metered=True
    )
    assert len(page.body["messages"]) == 10
    stack.clock.advance(limits.USAGE_FLUSH_SECONDS)  # the tally's window has closed
    again = {"inbox_id": own_inbox, "after": "0", "limit": 10}
    flushing = stack.call("GET", "/v1/messages", reader, query=again, metered=True)
    return {
        "usage_send_ddb_requests": float(statistics.median(send_requests)),
        "usage_extra_requests_per_send": send_usage_requests / SENDS,
        "usage_write_units_per_send": quiet_units / SENDS,
        "usage_notifier_requests_per_send": quiet_requests / SENDS,
        "usage_write_units_per_send_batched": batched.units_written(USAGE) / SENDS,
        "usage_extra_requests_per_read_page": float(_usage_requests(page.api, work)),
        "usage_write_units_per_read_page": float(page.api.units_written(USAGE)),
        "usage_tally_flush_requests": float(_usage_requests(flushing.api, work)),
    }


def estimate_vs_measured(results: dict[str, Any], page_size: int) -> dict[str, float]:
    """The usage cost model's price of the bench's workload (a million 1 KB messages sent,
    read in pages of `page_size`), over the bench's measured `cost_per_million_usd`: the
    same work, so near 1 while the model's constants match the code. The notifier's share
    of a send (`costs.NOTIFY`) and storage are left out, as the measured figure leaves
    them out."""
    from agentworks.usage.costs import PER_UNIT, SEND, price

    million = 1_000_000
    modelled = price(SEND * million + PER_UNIT["read_requests"] * (million / page_size))
    return {
        "usage_estimate_per_million_usd": modelled.total_usd,
        "usage_estimate_vs_measured": modelled.total_usd / results["cost_per_million_usd"],
    }
