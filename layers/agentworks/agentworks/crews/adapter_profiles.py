"""Adapter profiles (issue 8): an account's named adapter blocks — the same `scripted`,
`bedrock`, `lambda` or `mailbox` block a Crew has, or a `cli` block (a local runner's
session, workflow steps only), with a name — that workflow steps name with `adapter` (the
seed's "claude-code" is a profile name).

Defining one is account-wide administration (an admin without target bounds); any
connection of the account that reads functions sees which profiles exist and their type,
and only such an admin sees their settings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapter_profile_store import (
    AdapterProfile,
    AdapterProfileStore,
    ProfileExists,
    settings_json,
)
from agentworks.crews.adapters.registry import validate_adapter_settings
from agentworks.crews.views import AdapterProfileView
from agentworks.errors import Conflict, InvalidInput, LimitReached, Unavailable
from agentworks.identity.models import ADMIN, FUNCTIONS_READ, Principal
from agentworks.mcp_servers.declarations import declaration_json, parse_declaration
from agentworks.messaging.models import iso

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def parse_profile(data: Any) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """A profile file's content → (lower-case name, adapter settings, MCP tools it may call),
    or InvalidInput saying everything that is wrong."""
    if not isinstance(data, dict):
        raise InvalidInput("An adapter profile is a mapping: name, type and the type's settings.")
    name = data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise InvalidInput(
            "An adapter profile needs a name: 1–64 letters, digits, '.', '_' or '-' "
            "(e.g. claude-code).",
            field="name",
        )
    settings = {k: v for k, v in data.items() if k not in ("name", "mcp_tools")}
    mcp_tools = declaration_json(parse_declaration(data.get("mcp_tools")))
    stored = len(settings_json(settings).encode())
    if stored > limits.ADAPTER_PROFILE_MAX_BYTES:
        raise InvalidInput(
            f"Invalid adapter profile: it takes {stored:,} bytes as JSON; at most "
            f"{limits.ADAPTER_PROFILE_MAX_BYTES:,}."
        )
    problems = validate_adapter_settings(settings)
    if problems:
        raise InvalidInput("Invalid adapter profile: " + "; ".join(problems)[:1500])
    return name.lower(), settings, mcp_tools


def profile_view(profile: AdapterProfile, viewer: Principal) -> AdapterProfileView:
    """A profile as its reader sees it: its settings for an admin of the whole account only
    (they may hold a model, a function name, rules)."""
    account_admin = ADMIN in viewer.scopes and viewer.target_bounds is None
    return AdapterProfileView(
        name=profile.name,
        type=str(profile.settings.get("type")),
        settings=profile.settings if account_admin else None,
        mcp_tools=list(parse_declaration(profile.mcp_tools)),
        version=profile.version,
        created_at=iso(profile.created_at) or "",
        updated_at=iso(profile.updated_at) or "",
    )


class AdapterProfiles:
    def __init__(
        self,
        store: AdapterProfileStore,
        clock: Clock = SYSTEM_CLOCK,
        adapter_check: Callable[[str, dict[str, Any]], list[str]] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        # What only AWS knows about an adapter block (a lambda function's binding).
        self._adapter_check = adapter_check

    def _check_adapter(self, principal: Principal, settings: dict[str, Any]) -> None:
        problems = (
            self._adapter_check(principal.account_id, settings) if (self._adapter_check) else []
        )
        if problems:
            raise InvalidInput("Invalid adapter profile: " + "; ".join(problems)[:1500])

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def create(self, principal: Principal, data: Any) -> AdapterProfile:
        principal.require_account_admin()
        principal.require_own_token()  # a profile runs commands and endpoints later
        name, settings, mcp_tools = parse_profile(data)
        self._check_adapter(principal, settings)
        if len(self._store.list_all(principal.account_id)) >= limits.ADAPTER_PROFILES_PER_ACCOUNT:
            raise LimitReached(
                f"At most {limits.ADAPTER_PROFILES_PER_ACCOUNT} adapter profiles per account."
            )
        now = self._now()
        profile = AdapterProfile(principal.account_id, name, settings, 1, now, now, mcp_tools)
        try:
            self._store.create(profile)
        except ProfileExists:
            raise Conflict(
                f"Adapter profile {name} exists; change it with: "
                "agentworks adapters update --file FILE"
            ) from None
        return profile

    def update(self, principal: Principal, name: str, data: Any) -> AdapterProfile:
        principal.require_account_admin()
        principal.require_own_token()  # a profile runs commands and endpoints later
        profile = self._found(principal, name)
        new_name, settings, mcp_tools = parse_profile(data)
        if new_name != profile.name:
            raise InvalidInput(
                "An adapter profile can't be renamed; create a new one instead.", field="name"
            )
        self._check_adapter(principal, settings)
        if not self._store.replace(profile, settings, self._now(), mcp_tools):
            raise Conflict("The adapter profile changed meanwhile; get it again and retry.")
        return self._found(principal, name)

    def get(self, principal: Principal, name: str) -> AdapterProfile:
        principal.require(FUNCTIONS_READ)
        return self._found(principal, name)

    def list(self, principal: Principal) -> list[AdapterProfile]:
        principal.require(FUNCTIONS_READ)
        return sorted(self._store.list_all(principal.account_id), key=lambda p: p.name)

    def delete(self, principal: Principal, name: str) -> None:
        principal.require_account_admin()
        self._store.delete(self._found(principal, name))

    def _found(self, principal: Principal, name: str) -> AdapterProfile:
        profile = self._store.get(principal.account_id, name) if NAME.match(name) else None
        if profile is None:
            raise Unavailable()  # another account's profile looks exactly like none
        return profile
