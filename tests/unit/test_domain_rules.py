"""Pure domain rules: rate window (M11), cursors (M3, M6), tokens (A2), names (M4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.identity import tokens
from agentworks.messaging import rate_window
from agentworks.messaging.cursors import Cursors
from agentworks.messaging.names import normalize_agent_name, parse_target
from agentworks.signing import Signer

HOUR_MS = 3_600_000


def test_m11_window_admits_40_then_refuses_until_the_oldest_leaves():
    window: list[int] = []
    for i in range(40):
        decision = rate_window.admit(window, i * 1000)
        assert decision.allowed
        window = decision.window
    refused = rate_window.admit(window, 40_000)
    assert not refused.allowed and refused.retry_after == 3600 - 40
    assert rate_window.admit(window, HOUR_MS).allowed  # the first left the window


@given(st.lists(st.integers(min_value=0, max_value=10 * HOUR_MS), max_size=200))
def test_m11_window_never_holds_more_than_40_in_any_hour(times):
    window: list[int] = []
    for now in sorted(times):
        decision = rate_window.admit(window, now)
        window = decision.window
        assert len(window) <= 40
        assert all(now - t < HOUR_MS for t in window)


def test_m3_cursor_round_trip_and_binding():
    cursors = Cursors(Signer(b"k" * 32))
    c = cursors.inbox("ibx_A", 7)
    assert cursors.open_inbox(c, "ibx_A") == 7
    assert cursors.open_inbox("0", "ibx_A") == 0 and cursors.open_inbox(None, "ibx_A") == 0
    with pytest.raises(InvalidInput):
        cursors.open_inbox(c, "ibx_B")
    with pytest.raises(InvalidInput):
        cursors.open_mailbox(c, "ibx_A")
    with pytest.raises(InvalidInput):
        Cursors(Signer(b"x" * 32)).open_inbox(c, "ibx_A")  # another deployment's key


@given(st.text(max_size=300))
def test_m3_random_cursors_are_invalid_input_never_a_crash(text):
    cursors = Cursors(Signer(b"k" * 32))
    if text.strip() in {"", "0"}:
        return
    with pytest.raises(InvalidInput):
        cursors.open_inbox(text, "ibx_A")


def test_a2_tokens_parse_and_compare_by_hash():
    secret = tokens.new_secret()
    token = tokens.format_token("acct_1", "conn_1", secret)
    parsed = tokens.parse_token(token)
    assert parsed and parsed.account_id == "acct_1" and parsed.connection_id == "conn_1"
    assert tokens.secret_matches(parsed.secret, tokens.hash_secret(secret))
    assert not tokens.secret_matches("wrong", tokens.hash_secret(secret))
    for bad in ("", "aw1.a.b", "aw2.a.b.c", "aw1..b.c", "x" * 300):
        assert tokens.parse_token(bad) is None


@pytest.mark.parametrize("name", ["a", "Reviewer", "a.b_c-d", "9lives", "x" * 64])
def test_m4_valid_names_normalize_to_lower_case(name):
    assert normalize_agent_name(name) == name.lower()


@pytest.mark.parametrize(
    "name",
    ["", "-a", ".a", "_a", "a b", "é", "a/b", "x" * (limits.AGENT_NAME_MAX_CHARS + 1), "a:b"],
)
def test_m4_invalid_names_refused(name):
    with pytest.raises(InvalidInput):
        normalize_agent_name(name)


@pytest.mark.parametrize(
    ("target", "how"),
    [
        ("workflow:reviewer", "agentworks functions list --target workflow:reviewer"),
        ("relay:summarize", "agentworks relays run summarize FUNCTION --input JSON"),
    ],
)
def test_a_send_to_a_workflow_or_relay_says_how_to_call_it(target: str, how: str) -> None:
    """They exist and take calls, not messages: the refusal says so, never "not yet"."""
    with pytest.raises(InvalidInput) as refused:
        parse_target(target)
    assert how in refused.value.message
    assert "yet" not in refused.value.message
    assert refused.value.details == {"field": "target"}


def test_an_unknown_target_kind_names_the_two_that_take_messages() -> None:
    with pytest.raises(InvalidInput, match="target must be agent:NAME or crew:NAME"):
        parse_target("bot:x")


def test_an_inbox_pages_query_examines_what_it_expects_to_need() -> None:
    """M3: one side's page among the chain's newer messages: twice the page when the
    side's count is unknown (an item written before counts), every newer one when the
    side's are no more than the page, else the expected stretch plus two; 1 to 1,000."""
    from agentworks.messaging.message_page_store import _examine_budget

    assert _examine_budget(total_after=50, mine_after=None, wanted=10) == 20
    assert _examine_budget(total_after=50, mine_after=10, wanted=10) == 50
    assert _examine_budget(total_after=50, mine_after=7, wanted=10) == 50
    assert _examine_budget(total_after=100, mine_after=40, wanted=10) == 25 + 2
    assert _examine_budget(total_after=101, mine_after=40, wanted=10) == 26 + 2  # rounded up
    assert _examine_budget(total_after=0, mine_after=0, wanted=10) == 1
    assert _examine_budget(total_after=5_000, mine_after=None, wanted=800) == 1_000


def test_a2_a_token_is_the_documented_format_and_its_secret_stored_as_sha256() -> None:
    """`aw1.<account>.<connection>.<secret>`, at most 256 characters (surrounding space
    ignored); the secret is 256 random bits (43 base64url characters) stored as the hex of
    its SHA-256, computed here with hashlib, not with the product's code."""
    import hashlib
    import re

    secret = tokens.new_secret()
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", secret) and secret != tokens.new_secret()
    assert tokens.hash_secret(secret) == hashlib.sha256(secret.encode()).hexdigest()
    assert tokens.format_token("acct_1", "conn_1", "s3cret") == "aw1.acct_1.conn_1.s3cret"
    longest = "aw1.a.b." + "s" * (256 - len("aw1.a.b."))
    assert tokens.parse_token(longest) == tokens.ParsedToken("a", "b", "s" * 248)
    assert tokens.parse_token(longest + "s") is None
    assert tokens.parse_token("  aw1.a.b.c\n") == tokens.ParsedToken("a", "b", "c")
    for bad in ("aw1.a.b.c.d", "aw1.a..c", "aw1.a.b.", "AW1.a.b.c"):
        assert tokens.parse_token(bad) is None
    assert not tokens.secret_matches("s3cret", hashlib.sha256(b"other").hexdigest())
