"""The response models the CLI reads answers with: the server's own (agentworks package),
so a field renamed on one side breaks the other side's tests instead of a user's script.

A model is imported only once an answer has arrived: a command that fails to connect,
and `--help`, still start without pydantic (see client.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from agentworks_cli.client import CliError


@dataclass(frozen=True)
class Shape:
    module: str
    name: str

    def model(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def parse(self, body: Any) -> dict[str, Any]:
        """The answer as the model reads it (its fields, nothing else); a CliError when
        the answer does not have the model's shape."""
        from pydantic import ValidationError

        try:
            parsed = self.model().model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "body"
            raise CliError(
                f"the server's answer does not have the shape this CLI reads ({self.name}: "
                f"{where}: {first.get('msg', 'invalid')}); are the CLI and server versions "
                "the same?"
            ) from None
        return dict(parsed.model_dump(mode="json"))


_IDENTITY = "agentworks.identity.views"
_MESSAGING = "agentworks.messaging.models"
_CREWS = "agentworks.crews.views"
_CONVERSATION_MODELS = "agentworks.conversations.models"
_WORKFLOWS = "agentworks.workflows.views"

WHOAMI = Shape(_IDENTITY, "WhoAmI")
CONNECTION = Shape(_IDENTITY, "ConnectionView")
ISSUED_CONNECTION = Shape(_IDENTITY, "IssuedConnectionView")
CONNECTIONS = Shape(_IDENTITY, "ConnectionList")

AGENT = Shape(_MESSAGING, "AgentView")
AGENTS = Shape(_MESSAGING, "AgentList")
UNREGISTERED = Shape(_MESSAGING, "AgentUnregistered")
RECEIPT = Shape(_MESSAGING, "SendReceipt")
PAGE = Shape(_MESSAGING, "ReadPage")
ACK = Shape(_MESSAGING, "AckResult")
INBOX_STATE = Shape(_MESSAGING, "InboxState")

CREW = Shape(_CREWS, "CrewView")
CREWS = Shape(_CREWS, "CrewList")
CREW_DELETED = Shape(_CREWS, "CrewDeleted")
ADAPTER = Shape(_CREWS, "AdapterProfileView")
ADAPTERS = Shape(_CREWS, "AdapterProfileList")
ADAPTER_DELETED = Shape(_CREWS, "AdapterProfileDeleted")
MCP_SERVER = Shape("agentworks.mcp_servers.views", "McpServerView")
MCP_SERVERS = Shape("agentworks.mcp_servers.views", "McpServerList")
MCP_SERVER_REMOVED = Shape("agentworks.mcp_servers.views", "McpServerRemoved")
FUNCTIONS = Shape(_CREWS, "FunctionList")
CALL = Shape(_CREWS, "CallView")
CALL_ACCEPTED = Shape(_CREWS, "CallAccepted")
FILE_PAGE = Shape(_CREWS, "FilePage")
CREW_STATE = Shape(_CONVERSATION_MODELS, "CrewState")
REVIEW = Shape(_CONVERSATION_MODELS, "ReviewOutcome")
WAKEUP = Shape(_CONVERSATION_MODELS, "WakeupView")
REQUEST = Shape(_CONVERSATION_MODELS, "RequestView")
REQUESTS = Shape(_CONVERSATION_MODELS, "RequestList")
CONVERSATION = Shape(_CONVERSATION_MODELS, "ConversationStatusView")
CONVERSATIONS = Shape("agentworks.conversations.inbox_models", "ConversationList")  # C5
SESSION_LINK = Shape("agentworks.http_api.session", "SessionLink")  # C5 web sign-in

USAGE = Shape("agentworks.usage.views", "UsageReport")

AUDIT = Shape("agentworks.audit.models", "AuditPage")  # C6
_WEBHOOKS = "agentworks.conversation_webhooks.models"
WEBHOOK = Shape(_WEBHOOKS, "WebhookView")
WEBHOOKS = Shape(_WEBHOOKS, "WebhookList")
WEBHOOK_DELETED = Shape(_WEBHOOKS, "DeletedWebhook")
WEBHOOK_DELIVERIES = Shape(_WEBHOOKS, "WebhookDeliveries")

ALL: tuple[Shape, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Shape))

RUN = Shape(_WORKFLOWS, "RunView")
RUNS = Shape(_WORKFLOWS, "RunList")
RUN_STARTED = Shape(_WORKFLOWS, "RunStarted")
WEBHOOK_KEY = Shape(_WORKFLOWS, "WebhookKey")
REGISTERED = Shape("agentworks.workflows.registry_views", "RegisteredWorkflowView")
REGISTERED_LIST = Shape("agentworks.workflows.registry_views", "RegisteredWorkflowList")
UNREGISTERED_WORKFLOW = Shape("agentworks.workflows.registry_views", "RegisteredWorkflowDeleted")

_RUNNERS = "agentworks.runners.views"
RUNNER_CLAIM = Shape(_RUNNERS, "JobClaim")
RUNNER_LEASE = Shape(_RUNNERS, "JobLease")
RUNNER_FINISHED = Shape(_RUNNERS, "JobFinished")
