"""Wake latency: how long a long-polling reader takes to return after a send, in real
time, with the real clock and the service's real poll interval.

A reader thread long-polls an empty inbox (wait_seconds=5); about 0.3 s later the peer
sends into it (the headline median). A second sweep sends at offsets spread over one
poll interval, since the latency depends on where the send lands between two polls; its
maximum approaches the poll interval plus one page query. Latency runs from the start of
the send request to the reader's return, so it includes the send itself (conservative).
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from agentworks.clock import SYSTEM_CLOCK
from bench.request_costs import BODY
from bench.stack import open_stack, quiet
from tests.support.handlers import Api

SEND_AFTER_S = 0.3
SWEEP_OFFSETS_S = (0.05, 0.3, 0.55, 0.8, 1.05)


def _trial(
    api: Api, reader: str, query: dict[str, Any], sender: str, inbox: str, send_after: float
) -> tuple[float, str]:
    returned: dict[str, Any] = {}

    def read() -> None:
        reply = api("GET", "/v1/messages", reader, query={**query, "wait_seconds": 5})
        returned["at"], returned["reply"] = time.perf_counter(), reply

    thread = threading.Thread(target=read)
    thread.start()
    time.sleep(send_after)
    sent_at = time.perf_counter()
    reply = api("POST", "/v1/messages", sender, {"message": BODY, "inbox_id": inbox})
    assert reply.status == 201, reply.body
    thread.join(timeout=30)
    page = returned["reply"].body
    assert len(page["messages"]) == 1, page
    return returned["at"] - sent_at, page["next_cursor"]


def measure(trials: int = 5, poll_interval: float = 1.0) -> dict[str, float]:
    """Call inside mock_aws(); opens its own tables with services on the system clock."""
    stack = open_stack("bench-wake", SYSTEM_CLOCK, poll_interval=poll_interval)
    # A plain Api: the bench's timing wrappers are per call and not thread-safe.
    api = Api()
    latencies: list[float] = []
    sweep: list[float] = []
    with quiet():
        admin = stack.admin_token
        ext = api("POST", "/v1/connections", admin, {"name": "ext"}).body["token"]
        bob = api("POST", "/v1/connections", admin, {"name": "bob-conn"}).body["token"]
        api("POST", "/v1/agents", bob, {"agent_name": "bob"})
        ext_inbox = api("POST", "/v1/messages", ext, {"message": BODY, "target": "agent:bob"}).body[
            "inbox_id"
        ]
        mailbox = api("GET", "/v1/messages", bob, query={"agent_name": "bob"}).body
        bob_inbox = mailbox["messages"][0]["reply_address"]
        # ext waits on its inbox; bob's replies wake it.
        query: dict[str, Any] = {"inbox_id": ext_inbox}
        for samples, offsets in ((latencies, (SEND_AFTER_S,) * trials), (sweep, SWEEP_OFFSETS_S)):
            for offset in offsets:
                latency, query["after"] = _trial(api, ext, query, bob, bob_inbox, offset)
                samples.append(latency)
    return {
        "wake_latency_s": statistics.median(latencies),
        "wake_latency_max_s": max(latencies + sweep),
    }
