"""Issue 12's measure, as a test (not timed): usage counting adds no DynamoDB request to a
send and at most one write unit, by the bench's own meter (bench/usage.py, through the
real API and notifier handlers). `make bench` reports the same figures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from agentworks import runtime
from bench import usage
from bench.stack import open_stack
from tests.support.clock import FakeClock


@pytest.fixture(scope="module")
def figures() -> Iterator[dict[str, Any]]:
    with mock_aws():
        try:
            yield usage.measure(open_stack("usage-bench", FakeClock()))
        finally:
            runtime.install(None)


def test_a_send_makes_no_request_for_usage(figures):
    # docs/data-model.md's send: the head Query and the message's PutItem, nothing more.
    assert figures["usage_send_ddb_requests"] == 2
    assert figures["usage_extra_requests_per_send"] == 0


def test_a_send_costs_at_most_one_write_unit_of_usage(figures):
    # Worst case: the notifier invoked for each send alone writes one small item each time.
    assert 0 < figures["usage_write_units_per_send"] <= 1
    assert figures["usage_notifier_requests_per_send"] <= 1
    # A busy stream shares one write among a batch's sends of an account-day.
    assert figures["usage_write_units_per_send_batched"] == 1 / usage.SENDS


def test_a_read_page_makes_no_request_for_usage(figures):
    """Reads write nothing to fold a counter into: pages are tallied in the process and the
    first page after the tally's minute writes it, one ADD for one reader (tally tests)."""
    assert figures["usage_extra_requests_per_read_page"] == 0
    assert figures["usage_write_units_per_read_page"] == 0
    assert figures["usage_tally_flush_requests"] == 1
