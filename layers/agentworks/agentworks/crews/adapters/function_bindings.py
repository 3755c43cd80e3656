"""Which account a `lambda` adapter's function serves (issue 23).

Several accounts share one deployment, and every `agentworks-agent-*` function of its AWS
account matches the step runner's invoke grant. A function serves account X only when it
carries the tag `agentworks:account` = X: tags are set by whoever owns the AWS account,
never by a tenant, so no account can bind itself another's function. The tag is read with
GetFunction (it accepts a name; its `Tags` come only with a `lambda:ListTags` grant) and
kept `AGENT_FUNCTION_BINDING_CACHE_SECONDS` per container.

A function that does not exist and one bound to another account (or to none) get the same
refusal: an account learns nothing about functions that are not its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock

ACCOUNT_TAG = "agentworks:account"

# What Lambda answers for a function this role cannot see or that does not exist.
_NOT_THERE = frozenset(
    {
        "ResourceNotFoundException",
        "AccessDeniedException",
        "AccessDenied",
        "InvalidParameterValueException",
    }
)


class BindingUnknown(Exception):
    """The tag could not be read just now (throttled, network): try again later."""


def refusal(name: str) -> str:
    """The one answer for a function an account may not use, whether it exists or not."""
    return (
        f"lambda adapter: function {name!r} is not available to this account: it does not "
        f"exist or is not bound to it (the operator binds a function with its tag "
        f"{ACCOUNT_TAG}=<account id>)"
    )


class FunctionBindings:
    """Reads and caches the account each agent function is bound to."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        clock: Clock = SYSTEM_CLOCK,
        ttl_seconds: float = limits.AGENT_FUNCTION_BINDING_CACHE_SECONDS,
    ) -> None:
        self._client_factory = client_factory
        self._clock = clock
        self._ttl = ttl_seconds
        self._read: dict[str, tuple[float, str | None]] = {}  # name -> (read at, account)
        self._lock = threading.Lock()

    def may_use(self, account_id: str, name: str) -> bool:
        """Whether `account_id` may use function `name` (BindingUnknown when the tag cannot
        be read now)."""
        return bool(account_id) and self._bound_account(name) == account_id

    def _bound_account(self, name: str) -> str | None:
        now = self._clock.now()
        with self._lock:
            cached = self._read.get(name)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        account = self._fetch(name)
        with self._lock:
            self._read[name] = (now, account)
        return account

    def _fetch(self, name: str) -> str | None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            found = self._client_factory().get_function(FunctionName=name)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _NOT_THERE:
                return None
            raise BindingUnknown(f"reading function {name}'s binding failed: {code}") from exc
        except BotoCoreError as exc:
            raise BindingUnknown(f"reading function {name}'s binding failed: {exc}") from exc
        tags = found.get("Tags") or {}
        value = tags.get(ACCOUNT_TAG)
        return value if isinstance(value, str) and value else None
