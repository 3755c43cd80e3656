"""The parameters many routes share, declared once so that their bounds agree."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

# Every id and name in a path (an inbox, a message, a run, a call, a Crew, a webhook…) is at
# most 64 characters; a longer one is a 400, not a lookup.
PathId = Annotated[str, Path(max_length=64)]
# `after`: the next_cursor of the page before.
AfterCursor = Annotated[str | None, Query(max_length=64)]
# A definition (a Crew's, an adapter profile's) as its file holds it: any JSON object here,
# checked by its service, which names what is wrong.
Definition = Annotated[dict[str, Any], Body()]
