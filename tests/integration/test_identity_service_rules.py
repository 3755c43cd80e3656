"""The identity service's rules (A3–A6) on the service itself: what a new connection may be
given (never more than its creator holds, every refusal naming what to ask for), what it
inherits, who administers whom, and what revoking and authenticating answer. The HTTP and
CLI tests show the same rules through their surfaces; these read every message and field."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentworks import limits
from agentworks.errors import InvalidInput, LimitReached, Unauthenticated, Unavailable
from agentworks.identity.models import ALL_SCOPES, DEFAULT_SCOPES

# Written out, not imported: what a caller reads.
SCOPE_NAMES = (
    "messages:read, messages:send, functions:call, functions:read, workflows:run, "
    "relays:run, workflows:runner, mcp-servers:call, admin"
)


@pytest.fixture
def identity(stack) -> Any:
    return stack.services.identity


@pytest.fixture
def admin(stack) -> Any:
    return stack.principal(stack.admin_token)


def _refusal(action: Any) -> tuple[str, str | None]:
    with pytest.raises(InvalidInput) as refused:
        action()
    return refused.value.message, refused.value.details.get("field")


def _issued(identity: Any, admin: Any, name: str = "c", **asked: Any) -> Any:
    return identity.create_connection(admin, name, **asked)


def _as(identity: Any, issued: Any) -> Any:
    return identity.authenticate(issued.token)


@pytest.mark.parametrize("name", ["a", "x" * limits.CONNECTION_NAME_MAX_CHARS, "A1._-z", " pad "])
def test_a_name_of_one_to_the_most_safe_characters_is_taken(identity, admin, name) -> None:
    issued = _issued(identity, admin, name)
    assert issued.connection.name == name.strip()


@pytest.mark.parametrize(
    "name", ["", "   ", "x" * (limits.CONNECTION_NAME_MAX_CHARS + 1), "-lead", ".lead", "sp ace"]
)
def test_any_other_name_is_refused_saying_what_a_name_is(identity, admin, name) -> None:
    assert _refusal(lambda: _issued(identity, admin, name)) == (
        f"Connection name must be 1–{limits.CONNECTION_NAME_MAX_CHARS} ASCII letters, "
        "digits, '.', '_' or '-'.",
        "name",
    )


def test_scopes_default_to_all_but_admin_runner_and_mcp_calls(identity, admin) -> None:
    assert _issued(identity, admin).connection.scopes == DEFAULT_SCOPES
    assert set(ALL_SCOPES) - set(DEFAULT_SCOPES) == {
        "admin",
        "workflows:runner",
        "mcp-servers:call",
    }


def test_a_narrow_creators_defaults_are_the_defaults_it_holds(identity, admin) -> None:
    narrow = _issued(identity, admin, "narrow", scopes=["admin", "messages:read"])
    child = _issued(identity, _as(identity, narrow))
    assert child.connection.scopes == ("messages:read",)


def test_asked_scopes_are_trimmed_and_kept_once_in_order(identity, admin) -> None:
    asked = [" messages:send", "messages:read", "messages:send ", " "]
    issued = _issued(identity, admin, scopes=asked)
    assert issued.connection.scopes == ("messages:send", "messages:read")


@pytest.mark.parametrize(
    ("asked", "unknown"), [(["nope"], ["nope"]), ([], []), ([" "], []), (["admin", "x"], ["x"])]
)
def test_unknown_or_no_scopes_are_refused_with_the_list(identity, admin, asked, unknown) -> None:
    assert _refusal(lambda: _issued(identity, admin, scopes=asked)) == (
        f"Unknown or empty scopes {unknown}; choose from {SCOPE_NAMES}.",
        "scopes",
    )


def test_a_connection_grants_only_scopes_it_holds(identity, admin) -> None:
    reader = _as(identity, _issued(identity, admin, "reader", scopes=["admin", "messages:read"]))
    assert _refusal(lambda: _issued(identity, reader, scopes=["messages:read", "relays:run"])) == (
        "scopes ['relays:run'] are not this connection's own ['admin', 'messages:read']; "
        "a connection grants only scopes it holds.",
        "scopes",
    )


def test_bounds_are_checked_trimmed_and_kept_once(identity, admin) -> None:
    asked = [" crew:a", "workflow:w-1", "relay:r.2", "agent:x_y", "crew:a"]
    issued = _issued(identity, admin, target_bounds=asked)
    assert issued.connection.target_bounds == ("crew:a", "workflow:w-1", "relay:r.2", "agent:x_y")
    assert _issued(identity, admin, "none").connection.target_bounds is None
    for bad in (["crew:"], ["team:a"], ["crew:-a"], ["crew:" + "a" * 65], ["crew:a b"]):
        assert _refusal(lambda bad=bad: _issued(identity, admin, target_bounds=bad)) == (
            "Target bounds must look like crew:NAME, workflow:NAME, relay:NAME or agent:NAME; "
            f"got {bad}.",
            "target_bounds",
        )


def test_a_bounded_creator_gives_its_bounds_or_fewer_never_admin(identity, admin) -> None:
    bounded = _as(
        identity,
        _issued(identity, admin, "bounded", scopes=["admin", "messages:read"],
                target_bounds=["crew:a", "crew:b"]),
    )  # fmt: skip
    inherited = _issued(identity, bounded, scopes=["messages:read"])
    assert inherited.connection.target_bounds == ("crew:a", "crew:b")
    fewer = _issued(identity, bounded, "fewer", scopes=["messages:read"], target_bounds=["crew:b"])
    assert fewer.connection.target_bounds == ("crew:b",)
    assert _refusal(
        lambda: _issued(identity, bounded, scopes=["messages:read"], target_bounds=["crew:c"])
    ) == (
        "target_bounds ['crew:c'] lie outside this connection's own bounds ['crew:a', "
        "'crew:b']; ask within them, or ask an admin connection without target bounds.",
        "target_bounds",
    )
    assert _refusal(lambda: _issued(identity, bounded, scopes=["admin"])) == (
        "A bounded connection cannot create an admin connection.",
        None,
    )


def test_an_expiry_is_one_minute_to_four_hundred_days_and_never_past_the_creators(
    identity, admin, stack
) -> None:
    now = int(stack.clock.now())
    shortest = _issued(identity, admin, "short", expires_in_seconds=60)
    longest = _issued(identity, admin, "long", expires_in_seconds=400 * limits.DAY_SECONDS)
    assert shortest.connection.expires_at == now + 60
    assert longest.connection.expires_at == now + 400 * limits.DAY_SECONDS
    for seconds in (59, 400 * limits.DAY_SECONDS + 1):
        assert _refusal(
            lambda seconds=seconds: _issued(identity, admin, expires_in_seconds=seconds)
        ) == ("expires_in_seconds must be between 60 and 34,560,000.", None)
    creator = _as(
        identity,
        _issued(identity, admin, "creator", scopes=["admin", "messages:read"],
                expires_in_seconds=3_600),
    )  # fmt: skip
    inherited = _issued(identity, creator, scopes=["messages:read"])
    assert inherited.connection.expires_at == now + 3_600
    at_its_end = _issued(
        identity, creator, "end", scopes=["messages:read"], expires_in_seconds=3_600
    )
    assert at_its_end.connection.expires_at == now + 3_600
    assert _refusal(
        lambda: _issued(identity, creator, scopes=["messages:read"], expires_in_seconds=3_601)
    ) == (
        "expires_in_seconds reaches beyond this connection's own expiry; ask at most 3600 seconds.",
        "expires_in_seconds",
    )


def test_generations_nest_to_the_limit_and_no_deeper(identity, admin) -> None:
    creator, issued = admin, None
    for generation in range(1, limits.CONNECTION_GENERATIONS_MAX + 1):
        issued = _issued(identity, creator, f"g{generation}", scopes=["admin"])
        assert issued.connection.generation == generation
        creator = _as(identity, issued)
    with pytest.raises(LimitReached) as refused:
        _issued(identity, creator, "too-deep", scopes=["admin"])
    assert refused.value.message == (
        f"Connections nest at most {limits.CONNECTION_GENERATIONS_MAX} generations deep; "
        "create this one from a connection nearer the account's first admin."
    )


def test_ending_with_a_parent_passes_down_every_generation(identity, admin) -> None:
    free = _issued(identity, admin, "free", scopes=["admin"])
    assert (free.connection.ends_with_parent, free.connection.bound_to) == (False, ())
    bound = _issued(identity, _as(identity, free), "bound", scopes=["admin"], ends_with_parent=True)
    assert bound.connection.bound_to == (free.connection.connection_id,)
    below = _issued(identity, _as(identity, bound), "below", scopes=["admin"])  # not asked
    assert below.connection.ends_with_parent is True
    assert below.connection.bound_to == (
        bound.connection.connection_id,
        free.connection.connection_id,
    )
    assert below.connection.created_by == bound.connection.connection_id


def test_a_bounded_admin_lists_and_revokes_only_within_its_bounds(identity, admin) -> None:
    bounded_issued = _issued(identity, admin, "bounded", scopes=["admin", "messages:read"],
                             target_bounds=["crew:a", "crew:b"])  # fmt: skip
    bounded = _as(identity, bounded_issued)
    inside = _issued(
        identity, bounded, "inside", scopes=["messages:read"], target_bounds=["crew:a"]
    )
    outside = _issued(identity, admin, "outside", target_bounds=["crew:c"])
    unbounded = _issued(identity, admin, "unbounded")
    seen = {c["name"] for c in identity.list_connections(bounded)}
    assert seen == {"bounded", "inside"}
    assert {c["name"] for c in identity.list_connections(admin)} >= {
        "bounded", "inside", "outside", "unbounded",
    }  # fmt: skip
    for other in (outside, unbounded):
        with pytest.raises(Unavailable):
            identity.revoke(bounded, other.connection.connection_id)
    revoked = identity.revoke(bounded, inside.connection.connection_id)
    assert revoked.revoked_at is not None
    assert identity.revoke(bounded, inside.connection.connection_id).revoked_at == (
        revoked.revoked_at
    )  # again: unchanged
    with pytest.raises(Unavailable):
        identity.revoke(admin, "conn_01NOSUCH0000000000000000")


def test_a_connection_below_a_revoked_one_it_ends_with_is_listed_stopped(identity, admin) -> None:
    parent = _issued(identity, admin, "parent", scopes=["admin"])
    child = _issued(identity, _as(identity, parent), "child", scopes=["admin"],
                    ends_with_parent=True)  # fmt: skip
    loose = _issued(identity, _as(identity, parent), "loose", scopes=["admin"])
    identity.revoke(admin, parent.connection.connection_id)
    status = {c["name"]: c["status"] for c in identity.list_connections(admin)}
    assert (status["parent"], status["child"], status["loose"]) == ("revoked", "stopped", "active")
    with pytest.raises(Unauthenticated):
        identity.authenticate(child.token)
    assert identity.authenticate(loose.token).connection_id == loose.connection.connection_id


def test_every_failed_authentication_reads_alike(identity, admin, stack) -> None:
    issued = _issued(identity, admin, "t", expires_in_seconds=60)
    good = issued.token
    wrong_secret = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    messages = set()
    for token in ("", "garbage", wrong_secret):
        with pytest.raises(Unauthenticated) as refused:
            identity.authenticate(token)
        messages.add(refused.value.message)
    stack.clock.advance(61)
    with pytest.raises(Unauthenticated) as expired:
        identity.authenticate(good)
    messages.add(expired.value.message)
    assert messages == {
        "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
    }
    assert identity.live_principal(admin.account_id, issued.connection.connection_id) is None


def test_a_connection_is_live_until_it_expires_or_is_revoked(identity, admin, stack) -> None:
    expiring = _issued(identity, admin, "expiring", expires_in_seconds=60)
    revoked = _issued(identity, admin, "revoked")
    account, ids = admin.account_id, (expiring.connection.connection_id,)
    assert identity.is_live_connection(account, ids[0])
    identity.revoke(admin, revoked.connection.connection_id)
    assert not identity.is_live_connection(account, revoked.connection.connection_id)
    stack.clock.advance(59)
    assert identity.is_live_connection(account, ids[0])
    stack.clock.advance(1)
    assert not identity.is_live_connection(account, ids[0])
    assert not identity.is_live_connection(account, "conn_01NOSUCH0000000000000000")


def test_a_creator_revoked_since_it_authenticated_creates_nothing(identity, admin) -> None:
    creator = _issued(identity, admin, "creator", scopes=["admin", "messages:read"])
    held = _as(identity, creator)  # authenticated; then revoked before it asks
    identity.revoke(admin, creator.connection.connection_id)
    before = identity.list_connections(admin)
    with pytest.raises(Unauthenticated) as refused:
        _issued(identity, held, "child")
    assert refused.value.message == "Missing, invalid, expired or revoked token."
    assert identity.list_connections(admin) == before


def test_a_new_and_a_revoked_connections_view_say_what_each_is(identity, admin, stack) -> None:
    issued = _issued(identity, admin, "viewed")
    assert identity.view(issued.connection)["status"] == "active"
    revoked = identity.revoke(admin, issued.connection.connection_id)
    assert identity.view(revoked)["status"] == "revoked"


def test_a_new_account_is_named_local_and_its_first_connection_admin(identity, stack) -> None:
    """A6 bootstrap (what `make run` prints the token of): the account's id, its default
    name, and its first connection, which holds every scope."""
    issued = identity.bootstrap()
    connection = issued.connection
    assert re.fullmatch(r"acct_[0-9A-HJKMNP-TV-Z]{26}", connection.account_id)
    assert re.fullmatch(r"conn_[0-9A-HJKMNP-TV-Z]{26}", connection.connection_id)
    assert (
        connection.name,
        connection.scopes,
        connection.created_by,
        connection.ends_with_parent,
    ) == ("admin", ALL_SCOPES, None, False)
    account = stack.client.get_item(
        TableName=stack.settings.identity_table,
        Key={"pk": {"S": f"ACCOUNT#{connection.account_id}"}, "sk": {"S": "ACCOUNT"}},
    )["Item"]
    assert account["name"] == {"S": "local"}
    assert identity.authenticate(issued.token).connection_id == connection.connection_id
