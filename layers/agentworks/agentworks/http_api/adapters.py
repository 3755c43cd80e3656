"""/v1/adapters: the account's adapter profiles (issue 8), which workflow steps name."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from agentworks.crews.views import AdapterProfileDeleted, AdapterProfileList, AdapterProfileView
from agentworks.http_api.params import Definition, PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services

router = Router()


def _view(profile: Any) -> AdapterProfileView:
    from agentworks.crews.adapter_profiles import profile_view

    return profile_view(profile, current_principal(router))


@router.post(
    "/adapters",
    summary="Create an adapter profile from its definition (admin without target bounds)",
    status_code=201,
    responses=documented(201, 400, 403, 409, 413),
)
def create_adapter(definition: Definition) -> AdapterProfileView:
    return _view(services().crews.adapters.create(current_principal(router), definition))


@router.get("/adapters", summary="The account's adapter profiles", responses=documented(200, 403))
def list_adapters() -> AdapterProfileList:
    found = services().crews.adapters.list(current_principal(router))
    return AdapterProfileList(adapters=[_view(p) for p in found])


@router.get(
    "/adapters/<name>", summary="One adapter profile", responses=documented(200, 400, 403, 404)
)
def get_adapter(name: PathId) -> AdapterProfileView:
    return _view(services().crews.adapters.get(current_principal(router), name))


@router.put(
    "/adapters/<name>",
    summary="Replace an adapter profile's settings (same name; admin without target bounds)",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def update_adapter(name: PathId, definition: Definition) -> AdapterProfileView:
    return _view(services().crews.adapters.update(current_principal(router), name, definition))


@router.delete(
    "/adapters/<name>",
    summary="Delete an adapter profile (admin without target bounds)",
    responses=documented(200, 400, 403, 404),
)
def delete_adapter(name: PathId) -> AdapterProfileDeleted:
    services().crews.adapters.delete(current_principal(router), name)
    return AdapterProfileDeleted(name=name.lower(), deleted=True)
