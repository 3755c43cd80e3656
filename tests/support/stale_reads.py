"""A lagging replica for eventually consistent reads, which moto always answers fresh.

Real DynamoDB may answer a read without `ConsistentRead` from a replica that has not yet
applied the latest writes. `Replica.freeze()` pins such reads of a key's partition: the
first eventually consistent Query of it after the freeze is answered live and remembered,
and every identical one after it gets that same (now stale) answer until `thaw()`.
`missing()` makes them answer "no items", as a replica that has not seen a new partition
does. Strongly consistent reads always reach the store. Queries are lagged by default;
`reads=("Query", "GetItem")` lags single-item reads too ("missing": no `Item`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

from tests.support.faults import _Body


@dataclass
class Replica:
    stub: Any
    mode: str = "live"  # live | frozen | missing
    pinned: dict[str, bytes] = field(default_factory=dict)
    stale_answers: int = 0  # eventually consistent reads answered from the replica
    reads: tuple[str, ...] = ("Query",)  # the operations the replica answers

    def freeze(self) -> None:
        self.mode, self.pinned = "frozen", {}

    def missing(self) -> None:
        self.mode = "missing"

    def thaw(self) -> None:
        self.mode, self.pinned = "live", {}

    def _on_send(self, request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
        raw = request.body.decode() if isinstance(request.body, bytes) else request.body
        params = json.loads(raw) if raw else {}
        eventual = operation in self.reads and not params.get("ConsistentRead")
        if self.mode == "live" or not eventual:
            return self.stub(event_name="before-send.dynamodb", request=request)
        if self.mode == "missing":
            self.stale_answers += 1
            nothing = {} if operation == "GetItem" else {"Items": [], "Count": 0, "ScannedCount": 0}
            return _answer(request, nothing)
        if raw in self.pinned:
            self.stale_answers += 1
            return _answer(request, self.pinned[raw])
        live = self.stub(event_name="before-send.dynamodb", request=request)
        self.pinned[raw] = live.content
        return _answer(request, live.content)


def _answer(request: Any, body: dict[str, Any] | bytes) -> AWSResponse:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"x-amzn-RequestId": "replica", "Content-Type": "application/x-amz-json-1.0"}
    return AWSResponse(request.url, 200, headers, _Body(data))


def install(client: Any, reads: tuple[str, ...] = ("Query",)) -> Replica:
    """Puts the replica ahead of moto's stub on `client`."""
    from moto.core.models import botocore_stubber

    replica = Replica(botocore_stubber, reads=reads)
    client.meta.events.unregister("before-send", botocore_stubber)
    client.meta.events.register("before-send.dynamodb", replica._on_send)
    return replica
