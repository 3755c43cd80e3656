"""Crew definitions: create, update, get, list, delete (F1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.access import visible
from agentworks.crews.adapters.registry import validate_adapter_settings
from agentworks.crews.crew_store import CrewExists, CrewStore
from agentworks.crews.models import Crew, CrewDefinition
from agentworks.crews.schema_check import schema_error
from agentworks.errors import Conflict, InvalidInput, LimitReached, Unavailable
from agentworks.identity.models import ADMIN, FUNCTIONS_READ, Principal
from agentworks.ids import new_id
from agentworks.messaging.models import iso


def parse_definition(data: Any) -> CrewDefinition:
    """A Crew file's content → a checked definition, or InvalidInput saying what's wrong."""
    try:
        definition = CrewDefinition.model_validate(data)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'crew'}: {e['msg']}" for e in error.errors()
        ]
        raise InvalidInput("Invalid Crew definition: " + "; ".join(problems)[:1500]) from None
    stored = len(definition.model_dump_json().encode())
    if stored > limits.CREW_DEFINITION_MAX_BYTES:
        # Stored as one DynamoDB item (under 400 KB), whatever the request size allows.
        raise InvalidInput(
            f"Invalid Crew definition: it takes {stored:,} bytes as JSON; at most "
            f"{limits.CREW_DEFINITION_MAX_BYTES:,} (shorten instructions or schemas)."
        )
    problems = validate_adapter_settings(definition.adapter, for_crew=True)
    for spec in definition.functions:
        for label, schema in (
            ("input_schema", spec.input_schema),
            ("output_schema", spec.output_schema),
        ):
            if schema is not None and (why := schema_error(schema)):
                problems.append(f"functions.{spec.name}.{label}: {why}")
    if problems:
        raise InvalidInput("Invalid Crew definition: " + "; ".join(problems)[:1500])
    return definition


def crew_view(crew: Crew, viewer: Principal) -> dict[str, Any]:
    """A Crew as callers see it. Only an admin sees the adapter's settings (its rules,
    model or function name); anyone else sees which kind of adapter answers."""
    view = {
        "crew_id": crew.crew_id,
        "target": f"crew:{crew.name}",
        "version": crew.version,
        "running": crew.running,
        "created_at": iso(crew.created_at),
        "updated_at": iso(crew.updated_at),
        "owner_connection_id": crew.owner_connection_id,
        **crew.definition.model_dump(mode="json"),
    }
    if ADMIN not in viewer.scopes:
        view["adapter"] = {"type": crew.definition.adapter.get("type")}
    return view


AdapterCheck = Callable[[str, dict[str, Any]], list[str]]  # (account, settings) -> problems


class CrewService:
    def __init__(
        self,
        store: CrewStore,
        clock: Clock = SYSTEM_CLOCK,
        adapter_check: AdapterCheck | None = None,
    ) -> None:
        self._store = store
        # What only AWS knows about an adapter block (a lambda function's binding).
        self._adapter_check = adapter_check
        # What else goes with a deleted Crew (its conversations close); set by the wiring.
        self.on_deleted: Callable[[Crew], object] | None = None
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def create(self, principal: Principal, data: Any) -> Crew:
        principal.require(ADMIN)
        principal.require_own_token()  # its owner and access list hold authority
        definition = parse_definition(data)
        if not principal.may_target(f"crew:{definition.name.lower()}"):
            raise Unavailable()
        self._check_adapter(principal, definition)
        if len(self._store.list_all(principal.account_id)) >= limits.CREWS_PER_ACCOUNT:
            raise LimitReached(f"At most {limits.CREWS_PER_ACCOUNT} Crews per account.")
        now = self._now()
        crew = Crew(
            principal.account_id,
            new_id("crew", self._clock),
            definition,
            1,
            0,
            now,
            now,
            owner_connection_id=principal.connection_id,
        )
        try:
            self._store.create(crew)
        except CrewExists:
            raise Conflict(
                f"crew:{crew.name} exists; change it with: agentworks crews update --file FILE"
            ) from None
        return crew

    def update(self, principal: Principal, name: str, data: Any) -> Crew:
        principal.require(ADMIN)
        principal.require_own_token()
        crew = visible(principal, self._store.get(principal.account_id, name))
        definition = parse_definition(data)
        if definition.name.lower() != crew.name:
            raise InvalidInput("A Crew can't be renamed; create a new one instead.", field="name")
        self._check_adapter(principal, definition)
        if not self._store.update_definition(crew, definition, self._now()):
            raise Conflict("The Crew changed meanwhile; get it again and retry.")
        updated = self._store.get(principal.account_id, name)
        if updated is None:
            raise Unavailable()
        return updated

    def _check_adapter(self, principal: Principal, definition: CrewDefinition) -> None:
        problems = (
            self._adapter_check(principal.account_id, definition.adapter)
            if (self._adapter_check)
            else []
        )
        if problems:
            raise InvalidInput("Invalid Crew definition: " + "; ".join(problems)[:1500])

    def get(self, principal: Principal, name: str) -> Crew:
        principal.require(FUNCTIONS_READ)
        return visible(principal, self._store.get(principal.account_id, name.lower()))

    def list(self, principal: Principal) -> list[Crew]:
        principal.require(FUNCTIONS_READ)
        found = []
        for crew in self._store.list_all(principal.account_id):
            try:
                found.append(visible(principal, crew))
            except Unavailable:
                continue
        return sorted(found, key=lambda c: c.name)

    def delete(self, principal: Principal, name: str) -> None:
        principal.require(ADMIN)
        crew = visible(principal, self._store.get(principal.account_id, name.lower()))
        if not self._store.delete(crew):
            raise Unavailable()
        if self.on_deleted is not None:
            self.on_deleted(crew)  # C4: deleting a Crew closes its conversations
