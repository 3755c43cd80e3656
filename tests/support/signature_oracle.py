"""The webhook signature as its documentation states it, computed here with `hmac` alone —
not the product's own `verify()`, which would pass a wrong format as long as it agreed with
itself (docs/conversations.md, docs/workflows.md):

    X-AgentWorks-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">

keyed with the account's webhook key (its UTF-8 bytes); one `v1=` per key while it rotates.
"""

from __future__ import annotations

import hashlib
import hmac


def documented_signature_matches(key: str, header: str, body: bytes) -> bool:
    fields = [part.split("=", 1) for part in header.split(",")]
    assert all(len(f) == 2 for f in fields), f"not name=value pairs: {header!r}"
    timestamps = [value for name, value in fields if name == "t"]
    assert len(timestamps) == 1 and timestamps[0].isdigit(), f"one t=<unix seconds>: {header!r}"
    signed = timestamps[0].encode() + b"." + body
    expected = hmac.new(key.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return any(name == "v1" and hmac.compare_digest(value, expected) for name, value in fields)
