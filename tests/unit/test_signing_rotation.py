"""Rotating the signing secret without breaking what is in flight (issue 12 item 5): the
secret may list previous keys; tokens are sealed with the current one and opened with any,
MCP request state likewise, and webhooks carry one signature per key until the previous key
is dropped (docs/operations.md, "Rotating the signing secret")."""

from __future__ import annotations

import json

import pytest
from mcp.server.request_state import InvalidRequestState

from agentworks.errors import InvalidInput
from agentworks.mcp_server.request_state import SharedKeyCodec
from agentworks.messaging.cursors import Cursors
from agentworks.signing import secret_keys, signer_from_value
from agentworks.workflows.webhooks import signature, verify

OLD, NEW = "old-key-0123456789abcdef-0123456789", "new-key-0123456789abcdef-0123456789"
ROTATING = json.dumps({"current": NEW, "previous": [OLD]})


def test_the_secret_is_a_key_or_a_key_list() -> None:
    assert secret_keys(OLD) == [OLD.encode()]
    assert secret_keys(ROTATING) == [NEW.encode(), OLD.encode()]
    assert secret_keys(json.dumps({"current": NEW})) == [NEW.encode()]
    for bad in ('{"previous": []}', json.dumps({"current": NEW, "previous": OLD})):
        with pytest.raises(ValueError):
            secret_keys(bad)
    with pytest.raises(ValueError):
        signer_from_value(json.dumps({"current": NEW, "previous": ["short"]}))


def test_cursors_from_before_the_rotation_still_open_until_the_old_key_is_dropped() -> None:
    before = Cursors(signer_from_value(OLD)).inbox("ibx_A", 7)
    during = Cursors(signer_from_value(ROTATING))
    assert during.open_inbox(before, "ibx_A") == 7
    made_during = during.inbox("ibx_A", 9)
    assert Cursors(signer_from_value(NEW)).open_inbox(made_during, "ibx_A") == 9  # sealed new
    with pytest.raises(InvalidInput):
        Cursors(signer_from_value(NEW)).open_inbox(before, "ibx_A")  # old key dropped
    with pytest.raises(InvalidInput):
        during.open_inbox(before, "ibx_B")  # still bound to its inbox


def test_mcp_request_state_opens_across_the_rotation() -> None:
    sealed = SharedKeyCodec(lambda: OLD.encode()).seal(b'{"call_id":"call_1"}')
    rotating = SharedKeyCodec(lambda: ROTATING.encode())
    assert rotating.unseal(sealed) == b'{"call_id":"call_1"}'
    assert SharedKeyCodec(lambda: NEW.encode()).unseal(rotating.seal(b"x")) == b"x"
    with pytest.raises(InvalidRequestState):
        SharedKeyCodec(lambda: NEW.encode()).unseal(sealed)


def test_webhooks_are_signed_with_every_key_while_rotating() -> None:
    signer = signer_from_value(ROTATING)
    new_key, old_key = signer.derived_keys("webhook", "acct_1")
    assert new_key == signer.derived_key("webhook", "acct_1")
    assert old_key == signer_from_value(OLD).derived_key("webhook", "acct_1")
    body = b'{"event":"completed"}'
    header = signature([new_key, old_key], 1_800_000_000, body)
    assert header.count("v1=") == 2
    assert verify(old_key, header, body)  # a receiver that has not fetched the new key
    assert verify(new_key, header, body, now=1_800_000_010, max_age=300)
    assert not verify("another-key", header, body)
    assert not verify(new_key, header, b'{"event":"tampered"}')
    assert not verify(new_key, header, body, now=1_800_001_000, max_age=300)
    assert signature(new_key, 1, body).count("v1=") == 1
