"""A Crew's A2A agent card (issue 30 §1): its functions are its skills.

Both bindings share one URL per Crew: JSON-RPC is POST /a2a/{crew}, HTTP+JSON appends its
paths to it (/a2a/{crew}/message:send, /a2a/{crew}/tasks/{id} …).
"""

from __future__ import annotations

import json

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from agentworks.crews.models import Crew, FunctionSpec

BEARER = "bearer"
JSON = "application/json"
TEXT = "text/plain"
DESCRIPTION_MAX_CHARS = 500


def crew_url(base_url: str, crew_name: str) -> str:
    return f"{base_url.rstrip('/')}/a2a/{crew_name}"


def agent_card(crew: Crew, base_url: str) -> AgentCard:
    url = crew_url(base_url, crew.name)
    return AgentCard(
        name=crew.name,
        description=_description(crew),
        version=str(crew.version),
        provider=AgentProvider(organization="AgentWorks", url=base_url.rstrip("/")),
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=binding,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
            for binding in (TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value)
        ],
        # Responses go through API Gateway whole (no server-sent events); a client follows a
        # task with GetTask, or registers a push notification config on a call's task.
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        security_schemes={
            BEARER: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer",
                    description="An AgentWorks connection token (agentworks connect).",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
        default_input_modes=[JSON, TEXT],
        default_output_modes=[JSON, TEXT],
        skills=[_skill(f) for f in crew.definition.functions],
    )


def _description(crew: Crew) -> str:
    instructions = crew.definition.instructions.strip()
    first = instructions.split("\n\n", 1)[0][:DESCRIPTION_MAX_CHARS]
    return first or f"The AgentWorks Crew {crew.name}."


def _skill(function: FunctionSpec) -> AgentSkill:
    """A function as a skill: called with a data part {"function": name, "args": {...}};
    the args' JSON Schema is in the description (A2A skills have no schema field)."""
    call = {"function": function.name, "args": _example_args(function.input_schema)}
    schema = json.dumps(function.input_schema, separators=(",", ":"), sort_keys=True)
    return AgentSkill(
        id=function.name,
        name=function.name,
        description=(
            f"{function.description or function.name}\n\n"
            f'Call it with a data part {{"function": "{function.name}", "args": …}} whose '
            f"args match this JSON Schema: {schema}"
        ),
        tags=["function"],
        examples=[json.dumps(call, separators=(",", ":"))],
        input_modes=[JSON],
        output_modes=[JSON, TEXT],
    )


def _example_args(schema: dict[str, object]) -> dict[str, object]:
    """The required properties with a placeholder of their type."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    placeholders = {"string": "…", "integer": 1, "number": 1.5, "boolean": True, "array": []}
    example: dict[str, object] = {}
    for name in required:
        kind = (properties.get(name) or {}).get("type") if isinstance(name, str) else None
        if isinstance(name, str):
            example[name] = placeholders.get(kind, {}) if isinstance(kind, str) else {}
    return example
