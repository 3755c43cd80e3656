"""Every kind of stored item stays under DynamoDB's 400 KB item limit with every one of its
bounds at its maximum at once (F2–F8, M1, M4, M5, A2), counted the way DynamoDB counts
(tests/support/item_size.py), and written through the real stores to the local stack, which
refuses an oversized item as AWS does.

Texts are built from the characters that cost most once stored: 4-byte UTF-8 characters
where a bound counts characters, control characters (6 bytes as JSON escapes) where a
field is stored inside JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.conversations.delivery_items import Delivery, delivery_item
from agentworks.conversations.wakeup_store import Wakeup, _wakeup_item
from agentworks.crews.call_bounds import inline_result_max, stored_size
from agentworks.crews.call_store import CallStore
from agentworks.crews.models import CallRecord, PendingInput
from agentworks.crews.outputs import RESULT_FILE
from agentworks.crews.runner import store_result
from agentworks.crews.service import parse_definition
from agentworks.dynamo import to_item
from agentworks.errors import InvalidInput
from agentworks.identity.connection_store import ConnectionStore, grant_consent_item
from agentworks.identity.models import Connection, Consent
from agentworks.messaging.agent_store import registration_to_item
from agentworks.messaging.conversation_items import conversation_to_item, message_to_item
from agentworks.messaging.models import (
    Conversation,
    Party,
    Registration,
    StoredMessage,
    SubmissionBinding,
)
from agentworks.messaging.submission_store import binding_to_item
from tests.integration.crew_support import CONTRACTS
from tests.support.item_size import item_size

WIDE = "😀"  # 4 bytes of UTF-8, one character
ESCAPED = "\x01"  # 1 character, 6 bytes inside JSON (\u0001)
MAX = limits.DYNAMODB_ITEM_MAX_BYTES
ID = "call_01JZZZZZZZZZZZZZZZZZZZZZZZ"


class _Outputs:
    """Records what would go to S3 (the result file), in memory."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def put(self, prefix: str, path: str, content: bytes) -> int:
        self.files[prefix + path] = content
        return len(content)


def _raw(stack: Any, key: dict[str, str], table: str) -> dict[str, Any]:
    return stack.client.get_item(TableName=table, Key=to_item(key), ConsistentRead=True)["Item"]


def _max_args() -> dict[str, Any]:
    """args exactly at ARGS_MAX_BYTES, measured as the API measures them."""
    args = {"text": ""}
    args["text"] = ESCAPED * ((limits.ARGS_MAX_BYTES - len(json.dumps(args))) // 6)
    args["text"] += "x" * (limits.ARGS_MAX_BYTES - len(json.dumps(args)))
    assert len(json.dumps(args)) == limits.ARGS_MAX_BYTES
    return args


def _record_at_every_limit(args: dict[str, Any]) -> CallRecord:
    huge = ESCAPED * 200_000
    return CallRecord(
        call_id=ID,
        account_id="acct_" + "A" * 26,
        crew_name="c" * 64,
        crew_id="crew_" + "C" * 26,
        function="f" * 64,
        args=args,
        caller_connection_id="conn_" + "K" * 26,
        state="input_required",
        created_at=10**13,
        updated_at=10**13,
        submission_id="s" * limits.SUBMISSION_ID_MAX_CHARS,
        turns=limits.MAX_TURNS,
        corrections=limits.CORRECTION_TURNS,
        progress=[huge] * 1_000,
        errors=[huge] * 1_000,
        pending_inputs=[PendingInput(f"req_{i}", huge, 10**13) for i in range(50)],
        answers=[{"request_id": f"req_{i}", "answer": ESCAPED * 20_000} for i in range(50)],
        final_text=WIDE * 1_000_000,
        files=[{"path": "p" * 1024, "size": 10**12}] * 10_000,
        task_token="t" * 2048,
        handoff_inbox_id="inb_" + "I" * 27,
        handoff_message=huge,
        correction=huge,
        cost_usd=123456.789,
        handoff_agent="a" * 64,
        handoff_agent_id="agt_" + "G" * 26,
    )


@pytest.mark.parametrize("args_size", ["max", "small"])
def test_f6_a_call_record_at_every_limit_fits_one_item(stack, args_size):
    args = _max_args() if args_size == "max" else {"text": "short"}
    record = _record_at_every_limit(args)
    outputs = _Outputs()
    result = {"value": ESCAPED * ((limits.RESULT_INLINE_MAX_BYTES - 20) // 6)}
    assert len(json.dumps(result)) <= limits.RESULT_INLINE_MAX_BYTES
    store_result(record, outputs, result)  # type: ignore[arg-type]
    if args_size == "max":
        # Beside 256 KiB of args there is no room: the result goes to the call's file.
        assert (record.result_file, record.result) == (RESULT_FILE, None)
        assert json.loads(next(iter(outputs.files.values()))) == result
    else:
        assert record.result == result and record.result_file is None  # F6: inline
    store = CallStore(stack.client, stack.settings.work_table)
    item = store._item(record, 10**9)
    assert item_size(item) < MAX, item_size(item)
    store.put_new(record)  # the local stack refuses what AWS would refuse
    raw = _raw(stack, {"pk": f"CALL#{ID}", "sk": "META"}, stack.settings.work_table)
    assert item_size(raw) < MAX
    kept, _ = store.get(ID) or (None, 0)
    assert kept is not None and kept.args == args  # args are never shortened
    assert kept.final_text is not None and kept.final_text.endswith("[shortened]")
    assert kept.answers[-1]["request_id"] == "req_49"  # the newest answer is kept


def test_f6_an_inline_result_gives_way_only_to_large_args():
    small = _record_at_every_limit({"text": "short"})
    assert inline_result_max(small) == limits.RESULT_INLINE_MAX_BYTES
    big = _record_at_every_limit(_max_args())
    assert 0 <= inline_result_max(big) < limits.RESULT_INLINE_MAX_BYTES
    assert stored_size(big.args) <= limits.ARGS_MAX_BYTES


def _definition_of(stored_bytes: int) -> dict[str, Any]:
    definition = json.loads(json.dumps(CONTRACTS))
    definition["name"] = "c" * 64
    definition["instructions"] = WIDE * limits.INSTRUCTIONS_MAX_CHARS
    base = len(parse_definition(definition).model_dump_json().encode())
    definition["functions"][0]["input_schema"]["description"] = ""
    base = len(parse_definition(definition).model_dump_json().encode())
    # Schemas have no bound of their own: only the whole definition's.
    definition["functions"][0]["input_schema"]["description"] = "d" * (stored_bytes - base)
    return definition


def test_f1_a_crew_definition_is_bounded_by_what_one_item_holds(stack):
    at_limit = parse_definition(_definition_of(limits.CREW_DEFINITION_MAX_BYTES))
    assert len(at_limit.model_dump_json().encode()) == limits.CREW_DEFINITION_MAX_BYTES
    with pytest.raises(InvalidInput, match="bytes as JSON"):
        parse_definition(_definition_of(limits.CREW_DEFINITION_MAX_BYTES + 1))
    reply = stack.services.crews.definitions.create(
        stack.principal(stack.admin_token),
        _definition_of(limits.CREW_DEFINITION_MAX_BYTES),
    )
    raw = _raw(
        stack,
        {"pk": f"ACCOUNT#{reply.account_id}", "sk": f"CREW#{reply.name}"},
        stack.settings.work_table,
    )
    assert item_size(raw) < MAX, item_size(raw)


def test_m1_a_message_at_its_limits_fits_one_item():
    message = StoredMessage(
        conversation="C" * 26,
        side="b",
        seq=limits.INBOX_HISTORY_MAX * 1000,
        sender="crew:" + "n" * limits.AGENT_NAME_MAX_CHARS,
        body=WIDE * limits.MESSAGE_MAX_CHARS,
        created_at=10**13,
        receipt="processed",
        window=[10**13] * limits.RATE_LIMIT_MESSAGES,
        counts={"a": 10**9, "b": 10**9},
        submission_id=WIDE * limits.SUBMISSION_ID_MAX_CHARS,
    )
    assert item_size(to_item(message_to_item(message))) < MAX


def test_m4_a_registration_at_its_limits_fits_one_item():
    registration = Registration(
        account_id="acct_" + "A" * 26,
        name="n" * limits.AGENT_NAME_MAX_CHARS,
        display_name=WIDE * limits.AGENT_NAME_MAX_CHARS,
        agent_id="agt_" + "G" * 26,
        allowed_connection_ids=["conn_" + "K" * 26] * limits.ALLOWED_CONNECTIONS_MAX,
        created_at=10**13,
        created_by="conn_" + "K" * 26,
        mailbox_seq=10**12,
        purpose=WIDE * limits.PURPOSE_MAX_CHARS,
        provider=WIDE * 64,
        last_seen_at=10**13,
        acl_version=10**9,
    )
    assert item_size(to_item(registration_to_item(registration))) < MAX


def test_a2_a_connection_with_max_bounds_acting_as_every_name_fits_one_item(stack):
    store = ConnectionStore(stack.client, stack.settings.identity_table)
    account = "acct_" + "Z" * 26
    store.put_account(account, WIDE * 64, 10**13)
    connection = Connection(
        account_id=account,
        connection_id="conn_" + "K" * 26,
        name=WIDE * limits.CONNECTION_NAME_MAX_CHARS,
        scopes=tuple(f"scope:{i:02d}" for i in range(16)),
        secret_hash="h" * 64,
        created_at=10**13,
        target_bounds=tuple(
            f"crew:{i:03d}" + "n" * (limits.AGENT_NAME_MAX_CHARS - 3) for i in range(100)
        ),
        expires_at=10**13,
        created_by="conn_" + "K" * 26,
    )
    store.put_connection(connection, limits.CONNECTIONS_PER_ACCOUNT)
    for i in range(limits.REGISTRATIONS_PER_ACCOUNT):
        name = f"{i:03d}" + "n" * (limits.AGENT_NAME_MAX_CHARS - 3)
        consent = Consent("agt_" + "G" * 26, WIDE * limits.AGENT_NAME_MAX_CHARS, 10**13)
        update = grant_consent_item(
            stack.settings.identity_table, account, connection.connection_id, name, consent
        )
        stack.client.update_item(**update["Update"])
    raw = _raw(
        stack,
        {"pk": f"ACCOUNT#{account}", "sk": f"CONN#{connection.connection_id}"},
        stack.settings.identity_table,
    )
    assert item_size(raw) < MAX, item_size(raw)


def test_the_local_stack_refuses_an_oversized_item_as_aws_does(stack):
    oversized = {"pk": {"S": "X"}, "sk": {"S": "Y"}, "v": {"S": "a" * MAX}}
    assert item_size(oversized) > MAX
    with pytest.raises(ClientError) as refused:
        stack.client.put_item(TableName=stack.settings.work_table, Item=oversized)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "Item size has exceeded the maximum allowed size" in str(refused.value)


def test_item_size_counts_like_dynamodb():
    # Examples from DynamoDB's documentation on item sizes.
    assert item_size({"name": {"S": "abc"}}) == 4 + 3
    assert item_size({"n": {"N": "12345"}}) == 1 + 4  # 5 digits: 3 bytes + 1
    assert item_size({"b": {"BOOL": True}, "z": {"NULL": True}}) == 2 + 2
    assert item_size({"m": {"M": {}}}) == 1 + 3
    assert item_size({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)
    assert item_size({"m": {"M": {"k": {"S": "é"}}}}) == 1 + 3 + 1 + 1 + 2
    record = replace(_record_at_every_limit({"text": "x"}), progress=[], errors=[])
    assert stored_size(record.args) == len('{"text":"x"}')


def test_m2_m8_m9_the_fixed_shape_items_at_their_limits_fit_one_item():
    """Conversations, submission bindings, delivery records and wakeups hold ids, names and
    times only: their longest forms are far under the limit."""
    name = "n" * limits.AGENT_NAME_MAX_CHARS
    party = Party(kind="crew", agent_id="crew_" + "C" * 26, agent_name=name)
    conversation = Conversation(
        conversation="C" * 26,
        account_id="acct_" + "A" * 26,
        parties={"a": party, "b": party},
        created_at=10**13,
        last_activity=10**13,
        activity_hour=10**9,
        evicted_at=10**13,
    )
    binding = SubmissionBinding(
        content_hash="h" * 64,
        inbox_id="inb_" + "I" * 27,
        conversation_id="C" * 26,
        message_id="msg_" + "M" * 40,
        created_at=10**13,
        claim="c" * 64,
        claimed_at=10**13,
        sender=f"agent:{name}",
        submission_id=WIDE * limits.SUBMISSION_ID_MAX_CHARS,
        account_id="acct_" + "A" * 26,
    )
    delivery = Delivery(
        conversation="C" * 26,
        seq=10**9,
        message_id="msg_" + "M" * 40,
        account_id="acct_" + "A" * 26,
        crew_id="crew_" + "C" * 26,
        connection_id="conn_" + "K" * 26,
        state="pending_review",
        created_at=10**13,
        updated_at=10**13,
        run_id="run_" + "R" * 26,
        error="e" * 2_000,
    )
    wakeup = Wakeup(
        wakeup_id="wku_" + "C" * 26 + "W" * 26,
        conversation="C" * 26,
        wake="W" * 26,
        account_id="acct_" + "A" * 26,
        crew_id="crew_" + "C" * 26,
        crew_name=name,
        inbox_id="inb_" + "I" * 27,
        crew_inbox_id="inb_" + "I" * 27,
        agent_name=name,
        connection_id="conn_" + "K" * 26,
        due_at=10**13,
        state="scheduled",
        created_at=10**13,
        updated_at=10**13,
        run_id="run_" + "R" * 26,
        run_state="interrupted",
        error="e" * 2_000,
    )
    for item in (
        conversation_to_item(conversation),
        binding_to_item(binding),
        delivery_item(delivery),
        _wakeup_item(wakeup),
    ):
        assert item_size(to_item(item)) < 16 * 1024, item
