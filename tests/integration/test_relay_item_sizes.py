"""Relay items stay under DynamoDB's 400 KB item limit with every bound at its maximum at
once (issue 9): a run with the largest input, final JSON, error and evidence; a step with
the largest result; a release with the most functions and the largest schemas the source
allows. Written through the real stores to the local stack, which refuses an oversized item
as AWS does."""

from __future__ import annotations

import json
from typing import Any

from agentworks import limits
from agentworks.relays.records import Checkpoint, RelayRun, Release, ReleaseFunction
from tests.support.item_size import item_size

ESCAPED = '"'  # 1 byte, 2 inside a JSON string, 4 if that string were escaped again
MAX = limits.DYNAMODB_ITEM_MAX_BYTES
ULID = "01JZZZZZZZZZZZZZZZZZZZZZZZ"


def _json_of(size: int) -> str:
    """Compact JSON of exactly `size` bytes, nearly all of it escapes."""
    text = json.dumps({"q": ESCAPED * ((size - 8) // 2)}, separators=(",", ":"))
    return text + " " * (size - len(text.encode()))


def test_a_run_at_every_limit_fits_one_item(stack: Any) -> None:
    store = stack.services.relays.host._runs
    run = RelayRun(
        run_id=f"rrun_{ULID}",
        account_id=f"acct_{ULID}",
        relay="r" * 63,
        function="f" * 64,
        version=10**6,
        input_json=_json_of(limits.RELAY_INPUT_MAX_BYTES),
        idempotency_key="k" * limits.RELAY_IDEMPOTENCY_KEY_MAX_CHARS,
        fingerprint="h" * 64,
        caller="workflow:" + "w" * 64,
        caller_connection_id=f"conn_{ULID}",
        created_at=1_812_345_678_901,
        status="needs_reconciliation",
        attempt=99,
        execution=f"rrun_{ULID}-retry-99",
        execution_attempts=limits.RELAY_ATTEMPTS_MAX,
        credential_hash="c" * 64,
        result_json=_json_of(limits.RELAY_RESULT_MAX_BYTES),
        error=ESCAPED * 2000,
        evidence={
            "step": "s" * limits.RELAY_STEP_NAME_MAX_CHARS,
            "reason": ESCAPED * 300,
            "started_at": "2027-05-30T12:00:00.000+00:00",
            "attempt": 99,
        },
        updated_at=1_812_345_678_901,
        retries=98,
    )
    from agentworks.relays.run_store import _record, _run_key

    assert item_size({**_run_key(run.run_id), **_record(run, 10**6)}) < MAX
    assert store.create(run)
    found = store.get(run.run_id)
    assert found is not None and found[0] == run


def test_a_step_at_every_limit_fits_one_item(stack: Any) -> None:
    store = stack.services.relays.host._runs
    name = "s" * limits.RELAY_STEP_NAME_MAX_CHARS
    started = Checkpoint(
        name=name, status="started", attempt=99, safe=True, started_at=1_812_345_678_901, replays=98
    )
    assert store.start_step(f"rrun_{ULID}", started) is None
    result = _json_of(limits.RELAY_STEP_RESULT_MAX_BYTES)
    assert store.finish_step(f"rrun_{ULID}", name, 99, 1_812_345_678_902, result)
    found = store.step(f"rrun_{ULID}", name)
    assert found is not None and found.result_json == result and found.status == "completed"


def test_a_release_with_the_most_functions_and_largest_schemas_fits_one_item(stack: Any) -> None:
    # The schemas come from relay.yaml, part of the source: together at most its bound.
    schema_room = limits.RELAY_SOURCE_MAX_BYTES // limits.RELAY_FUNCTIONS_MAX
    schema = {"type": "object", "description": ESCAPED * (schema_room // 2)}
    release = Release(
        account_id=f"acct_{ULID}",
        relay="r" * 63,
        version=10**6,
        content_hash="h" * 64,
        archive_key="k" * 200,
        functions=[
            ReleaseFunction(f"{'f' * 60}{i:04d}", f"{'m' * 60}:{'a' * 60}", ESCAPED * 200, schema)
            for i in range(limits.RELAY_FUNCTIONS_MAX)
        ],
        description=ESCAPED * 1000,
        published_at=1_812_345_678_901,
        published_by=f"conn_{ULID}",
    )
    store = stack.services.relays.releases._store
    assert len(release.to_json().encode()) < MAX
    store.publish(release, None)
    assert store.release(release.account_id, release.relay, release.version) == release
