"""/v1/session: the web Inbox's sign-in (C5) — a one-time link for the caller's connection,
its exchange for a session cookie, sign-out (identity/web_sessions.py), and the session's
push tickets (identity/push_tickets.py)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.shared.cookies import Cookie, SameSite
from pydantic import BaseModel, Field

from agentworks import limits
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.identity.bearer import require_csrf_header, session_cookie
from agentworks.identity.web_sessions import SESSION_COOKIE
from agentworks.messaging.models import iso
from agentworks.runtime import identity_only, services

router = Router()


class SessionLink(BaseModel):
    code: str = Field(description="One use, within 5 minutes: POST it to /v1/session.")
    path: str = Field(description="The Inbox page with the code in its fragment.")
    expires_at: str = Field(description="ISO 8601, UTC")


class SessionExchange(BaseModel):
    code: str = Field(min_length=1, max_length=128)


class SessionStarted(BaseModel):
    account_id: str
    connection_id: str
    max_age: int = Field(description="Seconds the session cookie lives.")


class SessionEnded(BaseModel):
    signed_out: bool


class PushTicketIssued(BaseModel):
    ticket: str = Field(
        description="Open the push channel with ?ticket=… from the pages' own origin, "
        f"within {limits.PUSH_TICKET_SECONDS} seconds; it signs in that upgrade and nothing else."
    )
    expires_at: str = Field(description="ISO 8601, UTC")


def _cookie(value: str, max_age: int) -> Cookie:
    event = router.current_event
    https = str(event.headers.get("x-forwarded-proto", "")).lower() == "https"
    return Cookie(
        name=SESSION_COOKIE,
        value=value,
        path="/",
        secure=https,
        http_only=True,
        max_age=max_age,
        same_site=SameSite.STRICT_MODE,
    )


def _raw_event() -> dict[str, Any]:
    return dict(router.current_event.raw_event)


@router.post(
    "/session/links",
    summary="A one-time sign-in link to the web Inbox for this connection (5 minutes)",
    responses=documented(200),
)
def create_link() -> SessionLink:
    link = identity_only().web.create_link(current_principal(router))
    return SessionLink(
        code=link.code,
        path=f"/inbox#code={link.code}",
        expires_at=iso(link.expires_at * 1000) or "",
    )


@router.post(
    "/session",
    summary="Exchange a one-time link's code for a session cookie (HttpOnly, SameSite=Strict)",
    responses=documented(200, 403),
)
def start_session(request: Annotated[SessionExchange, Body()]) -> Response[SessionStarted]:
    require_csrf_header(_raw_event())
    web = identity_only().web
    session = web.exchange(request.code)
    principal = web.authenticate(session.session_id)
    body = SessionStarted(
        account_id=principal.account_id,
        connection_id=principal.connection_id,
        max_age=session.max_age,
    )
    return Response(
        status_code=200,
        content_type="application/json",
        body=body,
        cookies=[_cookie(session.session_id, session.max_age)],
        headers={"Cache-Control": "no-store"},
    )


@router.post(
    "/session/logout",
    summary="Sign out of the web Inbox: the session ends and its cookie is cleared",
    responses=documented(200, 403),
)
def end_session() -> Response[SessionEnded]:
    event = _raw_event()
    require_csrf_header(event)
    identity_only().web.logout(session_cookie(event))
    return Response(
        status_code=200,
        content_type="application/json",
        body=SessionEnded(signed_out=True),
        cookies=[_cookie("", 0)],
    )


@router.post(
    "/session/push-tickets",
    summary="A ticket that signs the web session's push channel upgrade in (60 seconds)",
    responses=documented(200, 403),
)
def create_push_ticket() -> Response[PushTicketIssued]:
    # Authenticated like every route (a cookie-signed POST carries the CSRF header); only a
    # web session gets one (a token's holder sends the token on the upgrade).
    issued = services().push.tickets.issue(current_principal(router), session_cookie(_raw_event()))
    return Response(
        status_code=200,
        content_type="application/json",
        body=PushTicketIssued(ticket=issued.ticket, expires_at=iso(issued.expires_at * 1000) or ""),
        headers={"Cache-Control": "no-store"},
    )
