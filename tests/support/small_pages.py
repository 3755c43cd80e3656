"""Pages as small as DynamoDB may make them, which moto never does below 1 MB.

Real DynamoDB ends a Query or Scan page at 1 MB of items read (or at a filter's `Limit`),
and the caller must follow `LastEvaluatedKey`. `install(client)` gives every Query and Scan
that names no `Limit` of its own a page of `size` items, so a reader that stops after its
first page reads short — which moto, answering in one page, would never show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class SmallPages:
    size: int = 1
    pages: int = 0  # the pages answered under the small page size

    def _limit(self, params: dict[str, Any], **_: Any) -> None:
        if "Limit" not in params:
            params["Limit"] = self.size
            self.pages += 1


def install(client: Any, size: int = 1) -> SmallPages:
    pages = SmallPages(size)
    for operation in ("Query", "Scan"):
        client.meta.events.register(f"provide-client-params.dynamodb.{operation}", pages._limit)
    return pages
