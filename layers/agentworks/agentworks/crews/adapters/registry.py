"""Choose and build a Crew's adapter from its `adapter` settings (SPEC §8).

`validate_adapter_settings` runs when a Crew is defined (bad settings are a 400 then),
with `account_problems` for what only AWS knows (a lambda function's binding);
`build_adapter` runs in the step runner for each turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapters import a2a_agent, bedrock, cli, lambda_adapter, mailbox, scripted
from agentworks.crews.adapters.base import Adapter, AdapterError
from agentworks.crews.adapters.function_bindings import BindingUnknown, FunctionBindings
from agentworks.errors import TryAgain

if TYPE_CHECKING:
    from agentworks.external_tasks.following import TaskReader

_VALIDATORS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "scripted": scripted.validate,
    "bedrock": bedrock.validate,
    "lambda": lambda_adapter.validate,
    "mailbox": mailbox.validate,
    "cli": cli.validate,
    "a2a": a2a_agent.validate,
}
ADAPTER_TYPES = tuple(sorted(_VALIDATORS))
# Adapters whose turns a local runner carries out (workflow steps only): the CLI names the
# session, so the platform keeps the CLI's session id instead of making one.
RUNNER_TYPES = frozenset({"cli"})
CREW_TYPES = tuple(kind for kind in ADAPTER_TYPES if kind not in RUNNER_TYPES)


def runs_on_a_runner(settings: dict[str, Any]) -> bool:
    """Whether `settings` (an adapter block) hands its turns to a local runner."""
    return settings.get("type") in RUNNER_TYPES


@lru_cache(maxsize=1)
def _default_bedrock_runtime() -> Any:
    import boto3
    from botocore.config import Config

    # A model turn can take minutes; botocore's 60 s read timeout would cut it.
    config = Config(read_timeout=300, retries={"mode": "standard", "max_attempts": 3})
    return boto3.client("bedrock-runtime", config=config)


@lru_cache(maxsize=1)
def _default_lambda() -> Any:
    import boto3
    from botocore.config import Config

    # A synchronous invoke may run up to Lambda's 15-minute limit.
    config = Config(read_timeout=905, retries={"mode": "standard", "max_attempts": 3})
    return boto3.client("lambda", config=config)


@lru_cache(maxsize=1)
def _default_secrets() -> Any:
    from agentworks.aws_clients import secretsmanager

    return secretsmanager()


@dataclass
class AdapterClients:
    """The AWS clients adapters may need, created on first use (tests inject factories),
    and the container's cache of agent functions' bindings."""

    bedrock_runtime_factory: Callable[[], Any] = _default_bedrock_runtime
    lambda_factory: Callable[[], Any] = _default_lambda
    secrets_factory: Callable[[], Any] = _default_secrets
    clock: Clock = SYSTEM_CLOCK
    a2a_secret_prefix: str = "agentworks/a2a-agents/"
    _made: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def bedrock_runtime(self) -> Any:
        """The bedrock-runtime client (created on the first call)."""
        if "bedrock" not in self._made:
            self._made["bedrock"] = self.bedrock_runtime_factory()
        return self._made["bedrock"]

    def lambda_client(self) -> Any:
        """The lambda client (created on the first call)."""
        if "lambda" not in self._made:
            self._made["lambda"] = self.lambda_factory()
        return self._made["lambda"]

    def bindings(self) -> FunctionBindings:
        """Which account each agent function serves (one cache per container)."""
        if "bindings" not in self._made:
            self._made["bindings"] = FunctionBindings(self.lambda_client, self.clock)
        made: FunctionBindings = self._made["bindings"]
        return made


def validate_adapter_settings(settings: Any, *, for_crew: bool = False) -> list[str]:
    """Human-readable problems with an `adapter` block (empty when it is usable); a Crew's
    (`for_crew`) is never of a runner type, and the types it is told of leave those out."""
    if not isinstance(settings, dict):
        return ["adapter must be a mapping with a 'type'"]
    kind = settings.get("type")
    validator = _VALIDATORS.get(kind) if isinstance(kind, str) else None
    known = CREW_TYPES if for_crew else ADAPTER_TYPES
    if validator is None:
        return [f"adapter type {kind!r} is unknown; known types: {', '.join(known)}"]
    if for_crew and kind in RUNNER_TYPES:
        return [
            f"adapter type {kind!r} runs workflow steps on a local runner; a Crew's calls need "
            f"one of {', '.join(known)} (define the {kind} block as an adapter profile for "
            "workflow steps)"
        ]
    return validator(settings)


def account_problems(
    account_id: str, settings: dict[str, Any], clients: AdapterClients
) -> list[str]:
    """What keeps `account_id` from using these valid settings that only AWS shows: a
    lambda adapter's function not bound to the account (it reads as nonexistent).
    TryAgain when that cannot be read just now."""
    if settings.get("type") != "lambda":
        return []
    try:
        return lambda_adapter.account_problems(account_id, settings, clients.bindings())
    except BindingUnknown:
        raise TryAgain(
            "The agent function's binding could not be read just now; try again."
        ) from None


def build_adapter(settings: dict[str, Any], clients: AdapterClients) -> Adapter:
    """The adapter for `settings`; AdapterError listing every problem when they are invalid."""
    problems = validate_adapter_settings(settings)
    if problems:
        raise AdapterError("invalid adapter settings: " + "; ".join(problems))
    kind = settings["type"]
    if kind == "scripted":
        return scripted.ScriptedAdapter(settings)
    if kind == "bedrock":
        return bedrock.BedrockAdapter(settings, clients.bedrock_runtime)
    if kind == "lambda":
        return lambda_adapter.LambdaAdapter(settings, clients.lambda_client, clients.bindings())
    if kind == "cli":
        return cli.CliAdapter(settings)
    if kind == "a2a":
        secrets = a2a_agent.secret_headers(clients.secrets_factory, clients.a2a_secret_prefix)
        return a2a_agent.A2aAdapter(settings, secrets, clients.clock)
    return mailbox.MailboxAdapter(settings)


def task_reader(settings: dict[str, Any], clients: AdapterClients) -> TaskReader:
    """The adapter whose turn left an external agent's task working (a2a), as the waits on
    such tasks and the tick read, watch and cancel them."""
    adapter = build_adapter(settings, clients)
    if not isinstance(adapter, a2a_agent.A2aAdapter):
        raise AdapterError(f"adapter type {settings.get('type')!r} leaves no external task")
    return adapter
