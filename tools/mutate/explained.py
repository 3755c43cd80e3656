"""The single edits known to be equivalent mutants: (module, the mutated line as mutmut
writes it, why no test can tell it from the original). Matched by text, not by mutant
number, so an edit elsewhere in the module keeps the explanation attached
(`equivalents.why_equivalent` reads this table).
"""

from __future__ import annotations

# Where the staged copy keeps the layer and the CLI (tools/mutate/run.py's layout).
LAYER = "src/agentworks"
CLI = "src/agentworks_cli"

_SAME_DEFAULT_ON_BOTH_IMAGES = (
    "both images are read with the same default, so a state missing from both compares "
    "equal under any default (and a call item always has one)"
)
_NOTICE_BODY_WHITESPACE = (
    "whitespace between JSON tokens: the receiver parses the body, and the signature is "
    "computed over the bytes sent, whatever they are"
)
_STORED_JSON_WHITESPACE = (
    "whitespace between JSON tokens of the stored record: read back by json.loads alike, "
    "a few bytes more on an item far below any bound"
)

_CAST_AT_RUNTIME = "`typing.cast` returns its value untouched at runtime, whatever the type"
_QUERY_ITEMS_ALWAYS = "a Query's answer always has `Items` (empty when nothing matched)"
_NO_PAGES_URL = (
    "with no pages URL given, a default that is not an http(s) URL has no origin, and "
    "`require_pages_origin` refuses every request alike"
)
_EVERY_TASK_NAMES_ITS_RUN = (
    "every task the workflow state machine sends names its run (`run_id.$`, checked for each "
    "task by test_every_task_the_state_machine_sends_reaches_its_action): the default is "
    "never read"
)
EXPLAINED = (
    (
        f"{LAYER}/authentication.py",
        'require_pages_origin(event, pages_url or (lambda: "XXXX"))',
        _NO_PAGES_URL,
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"record": json.dumps(record, separators=None),',
        _STORED_JSON_WHITESPACE,
    ),
    (f"{LAYER}/relays/run_store.py", '"record": json.dumps(record, ),', _STORED_JSON_WHITESPACE),
    (
        f"{LAYER}/relays/run_store.py",
        '"XXrunXX": {',
        "the run's put is never asked about by name: a run id is new, so only the key's "
        "condition can cancel the transaction",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"RUN": {',
        "the run's put is never asked about by name (see the line above)",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        "item.update(open_store=RELAY_OPEN, open_check=_open_check(due, None))",
        "the run id in the check only orders runs due in the same millisecond; the index "
        "answers the run's id from its table key either way",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'returned = from_item(cast(None, error.response).get("Item"))',
        _CAST_AT_RUNTIME,
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        "remaining = max(2, total_after - (position.seq - after.seq))",
        "the floor only acts when at most one item is left to examine (sequence numbers "
        "have no gaps): a Limit of 2 there examines the same one item",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        'for raw in response.get("Items", None):',
        _QUERY_ITEMS_ALWAYS,
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        'for raw in response.get("Items", ):',
        _QUERY_ITEMS_ALWAYS,
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        "if position.seq <= latest.seq:",
        "when the position already is the newest message, moving it there writes the same "
        "seq and count",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '":first": keys.message(conversation, max(1, seq - 3 * limit))["sk"],',
        "the window read before a request: a wider one reads more and answers the same "
        "newest `limit` notes",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '":before": keys.message(None, max(1, seq - 1))["sk"],',
        "a message's sort key is its seq alone (the conversation is in the partition key)",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '":first": keys.message(None, max(1, seq - 2 * limit))["sk"],',
        "a message's sort key is its seq alone (the conversation is in the partition key)",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        "payload = json.dumps([destination, sender, body], ensure_ascii=None).encode()",
        "any one encoding hashes the same send alike (bindings last a day; the encoding "
        "does not change under a live binding)",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        "payload = json.dumps([destination, sender, body], ).encode()",
        "any one encoding hashes the same send alike (bindings last a day; the encoding "
        "does not change under a live binding)",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        "payload = json.dumps([destination, sender, body], ensure_ascii=True).encode()",
        "any one encoding hashes the same send alike (bindings last a day; the encoding "
        "does not change under a live binding)",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '"Limit": 3 * limit,',
        "the page size of a filtered query: a larger page reads more per request and "
        "answers the same records (the loop reads on until it has `limit`)",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        "while len(records) <= limit:",
        "one page more when exactly `limit` were found, cut back to `limit`: the same answer",
    ),
    (
        f"{LAYER}/messaging/service.py",
        "digest = content_hash(inbox.inbox_id, None, hashed_body(body, framing))",
        "the inbox id names the party whose address this is: the digest binds it already",
    ),
    (
        f"{LAYER}/messaging/service.py",
        "return self._authority.open(principal, inbox, None)[0]",
        "the send's first open checked the name against the side it holds, and a "
        "conversation's parties never change: the retry's open finds the same (its consent "
        "and liveness are checked either way)",
    ),
    (
        f"{LAYER}/messaging/service.py",
        'to_agent=receiver.agent_id if (receiver.kind == "agent") or True else None,',
        "only a named agent's side is listened to by name: an external side has no agent "
        "id (None either way), and nobody holds — so nobody listens on — a Crew's side",
    ),
    (
        f"{LAYER}/messaging/service.py",
        "poll_interval: float = 2.0,",
        "the one caller (runtime.build_services) passes the long poll's interval from the "
        "settings: the default is never used",
    ),
    (
        f"{LAYER}/messaging/service.py",
        'created_at=iso(now) or "XXXX",',
        "`iso` of a time (an int) is never None, so the default is never used",
    ),
    (
        f"{LAYER}/messaging/service.py",
        'crew = self._gate().admit(principal, peer.agent_name or "XXXX")',
        "a Crew's party always carries its name (the `or` only satisfies the type), so "
        "the default is never used",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'if self.step(run_id, at) == "XXdoneXX":',
        "a step that answers done has saved a terminal record (or has none to save): the "
        "check that follows finds it terminal and does nothing either way",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'if self.step(run_id, at) == "DONE":',
        "a step that answers done has saved a terminal record (see the line above)",
    ),
    (
        f"{LAYER}/crews/call_bounds.py",
        "if len(text) < max_bytes and stored_size(text) <= max_bytes:",
        "a text of exactly `max_bytes` characters stores in at least two bytes more (its "
        "quotes), so the stored-size check refuses it under `<` and `<=` alike",
    ),
    (
        f"{LAYER}/crews/call_bounds.py",
        "mid = (low + high + 2) // 2",
        "while low < high that probe still lies in (low, high]: the search still narrows to "
        "the longest head that fits, by other steps",
    ),
    *(
        (f"{LAYER}/workflows/engine.py", line, _EVERY_TASK_NAMES_ITS_RUN)
        for line in (
            'run_id = str(event.get("run_id", None))',
            'run_id = str(event.get("run_id", ))',
            'run_id = str(event.get("run_id", "XXXX"))',
        )
    ),
    (
        f"{LAYER}/workflows/engine.py",
        "wait = crew_steps.busy_wait(found[0].busy_rounds if found else 2)",
        "a step answers busy only after saving its record with the rounds it counted, so the "
        "read that follows finds it",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'profile = self._profiles.get(run.account_id, opener.adapter or "XXXX")',
        "the step that opens a session names its adapter (the definition refuses one naming "
        "neither 'adapter' nor 'sessionRef'), so the default is never read",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'call = crew_steps.describe(step) if (step.kind == "crew") or True else '
        "choices.question(step)",
        "a branch's input hash is compared only with the same branch's in a retry, which "
        "keeps the definition (a branch's question resolves no variables, and a branch is "
        "never journaled for the cache): whatever text is hashed, both sides hash the same",
    ),
    *(
        (
            f"{LAYER}/workflows/engine.py",
            line,
            "the definition names every stage when it is read (`stage-N` for one left "
            "unnamed), so the fallback is never taken",
        )
        for line in (
            'label = stage.label or f"stage-{at.stage - 1}"',
            'label = stage.label or f"stage-{at.stage + 2}"',
        )
    ),
    (
        f"{LAYER}/identity/tokens.py",
        "return secrets.token_urlsafe(None)",
        "`secrets.token_urlsafe(None)` takes the module's default entropy, 32 bytes: the "
        "same 43-character secret",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        "if len(record.mcp_calls) >= len(cancelled.mcp_calls):",
        "only the engine adds a step's MCP calls, appending to the list it read: the stored "
        "list is a prefix of the turn's, so of equal length it is the same list, and writing "
        "it again changes nothing the step shows",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        "if (self._tools) or True",
        "every engine that runs steps is built with its tools (the tick's, built without, "
        "runs none)",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        "if found is not None or not found[0].terminal:",
        "the step was just run, so its record exists: `or` and `and` read the same record",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'outcome = self._runner.outcome(context.run.account_id, context.record.job_id or "XXXX")',
        "reached only when the step holds a job id (`_run_turns` checks it first)",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        'start: dict[str, Any] | None = ""',
        "the first page is asked for when `start` is falsy: None and an empty string alike",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'sender=data["pk"].split("#", )[2],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'sender=data["pk"].rsplit("#", 2)[2],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'sender=data["pk"].split("#", 3)[2],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'account_id=data["pk"].split("#", )[1],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'account_id=data["pk"].rsplit("#", 2)[1],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'account_id=data["pk"].split("#", 3)[1],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        'created_at=iso(binding.created_at) or "XXXX",',
        "a binding is replayed only once it names its message, and complete_binding writes "
        "the message's time with it: created_at is never missing there",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"Key": to_item({"pk": f"RRUN#{run_id}", "sk": "XXSTEPSXX"}),',
        "the step count's key is built here alone, for every write and read of the count, "
        "so any fixed key counts alike",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"Key": to_item({"pk": f"RRUN#{run_id}", "sk": "steps"}),',
        "the step count's key is built here alone, so any fixed key counts alike",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"XXcountXX": self._counted(run_id, -1),',
        "a transaction item's label names it in a cancellation; forgetting never fails "
        "on the count (it only goes down), so no cancellation names it",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"COUNT": self._counted(run_id, -1),',
        "a transaction item's label; forgetting never fails on the count",
    ),
    (
        f"{LAYER}/crews/calls.py",
        "payload = json.dumps([target, function, args], sort_keys=True, separators=None)",
        "any fixed separators give the same hash for the same arguments; only sorted keys "
        "matter (held by the key-order test)",
    ),
    (
        f"{LAYER}/crews/calls.py",
        "payload = json.dumps([target, function, args], sort_keys=True, )",
        "any fixed separators give the same hash for the same arguments",
    ),
    (
        f"{LAYER}/crews/calls.py",
        'payload = json.dumps([target, function, args], sort_keys=True, separators=("XX,XX", ":"))',
        "any fixed separators give the same hash for the same arguments",
    ),
    (
        f"{LAYER}/crews/calls.py",
        'payload = json.dumps([target, function, args], sort_keys=True, separators=(",", "XX:XX"))',
        "any fixed separators give the same hash for the same arguments",
    ),
    (
        f"{LAYER}/crews/calls.py",
        'content, encoding = chunk.content.decode("UTF-8"), "utf-8"',
        "Python's codec names ignore case: `UTF-8` and `utf-8` are one codec",
    ),
    (
        f"{LAYER}/crews/calls.py",
        '"functions": [f.model_dump(mode="XXjsonXX") for f in crew.definition.functions],',
        "any mode but 'json' is pydantic's python mode, and the answer is serialized to JSON "
        "after: a function spec's fields (strings and JSON Schema dicts) come out the same",
    ),
    (
        f"{LAYER}/crews/calls.py",
        '"functions": [f.model_dump(mode="JSON") for f in crew.definition.functions],',
        "any mode but 'json' is pydantic's python mode, and the answer is serialized to JSON "
        "after: a function spec's fields (strings and JSON Schema dicts) come out the same",
    ),
    (
        f"{LAYER}/crews/calls.py",
        "record is None and found is None",
        "`record` is None exactly when `found` is (it is `found[0]`): `and` and `or` agree",
    ),
    (
        f"{LAYER}/crews/calls.py",
        "or found is None and record.account_id != principal.account_id",
        "another account's connection holds consents only for its own account's names, "
        "whose agent ids differ from the hand-off's: the agent-id check refuses it",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        "if change >= 0:",
        "a step count moves by +1 or -1, never 0: `> 0` and `>= 0` choose alike",
    ),
    (
        f"{CLI}/bridge/journal.py",
        "    if excess >= 0:",
        "with excess 0 the DELETE's LIMIT 0 removes nothing: `> 0` and `>= 0` do the same",
    ),
    (
        f"{CLI}/bridge/journal.py",
        "\"DELETE FROM MESSAGES WHERE STATE != 'QUEUED' AND OFFERED_AT < ?\",",
        "a queued message was never offered (offered_at is NULL), so `state != 'QUEUED'` "
        "matches no more rows than `state != 'queued'`",
    ),
    (
        f"{LAYER}/a2a_server/push_notices.py",
        'return str((image.get("state") or {}).get("S", "XXXX"))',
        _SAME_DEFAULT_ON_BOTH_IMAGES,
    ),
    (
        f"{LAYER}/a2a_server/push_notices.py",
        'return str((image.get("state") or {}).get("S", None))',
        _SAME_DEFAULT_ON_BOTH_IMAGES,
    ),
    (
        f"{LAYER}/a2a_server/push_notices.py",
        'return str((image.get("state") or {}).get("S", ))',
        _SAME_DEFAULT_ON_BOTH_IMAGES,
    ),
    (
        f"{LAYER}/a2a_server/push_notices.py",
        "return json.dumps(body, separators=None).encode()",
        _NOTICE_BODY_WHITESPACE,
    ),
    (
        f"{LAYER}/a2a_server/push_notices.py",
        "return json.dumps(body, ).encode()",
        _NOTICE_BODY_WHITESPACE,
    ),
    (
        f"{LAYER}/external_tasks/wait_store.py",
        '"record": json.dumps(asdict(wait), separators=None),',
        _STORED_JSON_WHITESPACE,
    ),
    (
        f"{LAYER}/external_tasks/wait_store.py",
        '"record": json.dumps(asdict(wait), ),',
        _STORED_JSON_WHITESPACE,
    ),
    (
        f"{LAYER}/identity/bearer.py",
        'method = str(((event.get("requestContext") or {}).get("http") or {})'
        '.get("method") or "XXXX")',
        "an event that names no method is no read under either default: '' and 'XXXX' both "
        "need the CSRF header",
    ),
    (
        f"{LAYER}/crews/calls.py",
        '"functions": [f.model_dump(mode=None) for f in crew.definition.functions],',
        "any mode but 'json' is pydantic's python mode, and the answer is serialized to JSON "
        "after: a function spec's fields (strings and JSON Schema dicts) come out the same",
    ),
)
