"""Every bound the product promises (SPEC §2–§3, M11), in one place.

Each constant is enforced where it applies and has a test at and just past it.
"""

from __future__ import annotations

DAY_SECONDS = 24 * 3600

# M1 / M11: message bodies are counted in Unicode characters, not bytes.
MESSAGE_MIN_CHARS = 1
MESSAGE_MAX_CHARS = 20_000

# M11: accepted messages per conversation per sliding hour, both directions together.
RATE_LIMIT_MESSAGES = 40
RATE_LIMIT_WINDOW_SECONDS = 3600

# M11: messages kept per inbox; the oldest delivered/stored one is evicted on overflow.
INBOX_HISTORY_MAX = 1_000

# M11: an inbox idle this long is removed; its metadata stays readable as `expired`
# for EXPIRED_LOOKUP_SECONDS more.
INBOX_IDLE_SECONDS = 7 * DAY_SECONDS
EXPIRED_LOOKUP_SECONDS = 7 * DAY_SECONDS
EXPIRED_LOOKUP_MAX_ENTRIES = 2_000
MESSAGE_RETENTION_SECONDS = INBOX_IDLE_SECONDS

# M11: live inboxes per initiating account and per store; admission past either evicts
# the oldest idle inbox.
INBOXES_PER_INITIATING_ACCOUNT = 300
INBOXES_PER_STORE = 2_000

# M3 / M11: long-poll and page bounds.
WAIT_MAX_SECONDS = 25
PAGE_MAX = 100
PAGE_DEFAULT = 50

# M4: named agents.
AGENT_NAME_MAX_CHARS = 64
PURPOSE_MAX_CHARS = 512
REGISTRATIONS_PER_ACCOUNT = 100
REGISTRATIONS_PER_SERVER = 2_000

# M2: a submission id is the caller's retry key; bindings live as long as a message.
SUBMISSION_ID_MAX_CHARS = 128
SUBMISSION_BINDING_SECONDS = MESSAGE_RETENTION_SECONDS

# M8: delivery records shown per inbox by `state`.
STATE_DELIVERY_RECORDS = 20

# M5: connections a name's allow-list holds (each is mirrored on its connection item).
ALLOWED_CONNECTIONS_MAX = 50

# DynamoDB: items in one TransactWriteItems.
TRANSACTION_MAX_ITEMS = 100

# A2: connections.
CONNECTION_NAME_MAX_CHARS = 64
CONNECTIONS_PER_ACCOUNT = 200
# Generations of connections creating connections (the first admin is 0): authentication
# reads every ancestor a connection ends with in one BatchGetItem (at most 100 keys).
CONNECTION_GENERATIONS_MAX = 8

# HTTP: a 20,000-emoji body escaped as JSON (\\uXXXX pairs) is ~240 KB; allow headroom.
REQUEST_BODY_MAX_BYTES = 512 * 1024

# Request JSON (HTTP and MCP): nesting deeper than this, or a number written with more
# characters than this, is refused before any route sees the body (never a 500).
JSON_MAX_DEPTH = 64
JSON_NUMBER_MAX_CHARS = 100
# F3: a function call's `args` may nest this deep (the request envelope takes the rest).
ARGS_MAX_DEPTH = 32
# F7: a person's answer to a call's question.
ANSWER_MAX_CHARS = 20_000
# F1: connection ids a Crew's `access` list may name.
CREW_ACCESS_MAX_ENTRIES = 100

# M9: the one-minute tick has 50 s. It claims at most this many due wakeups, shared fairly
# among at most this many accounts (longest waiting first), and records at most this many
# stale claims as interrupted.
WAKEUPS_PER_TICK = 500
WAKEUP_ACCOUNTS_PER_TICK = 200
WAKEUP_STALE_PER_TICK = 100
# The due index is eventually consistent: an account's marker touched this recently may
# hide a wakeup the index does not show yet, so the tick leaves it to look again.
WAKEUP_INDEX_SETTLE_SECONDS = 60

# F5: the tick asks Step Functions about at most this many open calls a minute; a call is
# first asked about this long after its last change, then again this often while it runs.
RECONCILE_CALLS_PER_TICK = 100
RECONCILE_GRACE_SECONDS = 120
RECONCILE_RECHECK_SECONDS = 600

# DynamoDB refuses an item of 400 KB (names + values); every stored item stays under it at
# every limit at once (tests/integration/test_item_sizes.py adds them up).
DYNAMODB_ITEM_MAX_BYTES = 400 * 1024
# A Crew's definition, as stored (JSON): its item's other attributes take under 1 KB.
CREW_DEFINITION_MAX_BYTES = 380 * 1024
# F2–F8: what a call record keeps besides `args` and an inline result, in stored bytes
# (JSON, UTF-8). Longer text is shortened with a marker; the oldest entries of a list go
# first. An inline result takes what is left of CALL_RECORD_MAX_BYTES after the call's
# own args and all of these; a larger one goes to the call's result.json (F6).
CALL_RECORD_MAX_BYTES = 390_000
CALL_FINAL_TEXT_MAX_BYTES = 24 * 1024
CALL_PROGRESS_MAX_BYTES = 8 * 1024
CALL_ERRORS_MAX_BYTES = 8 * 1024
CALL_QUESTIONS_MAX_BYTES = 8 * 1024
CALL_ANSWERS_MAX_BYTES = 24 * 1024
CALL_HANDOFF_MESSAGE_MAX_BYTES = 24 * 1024
CALL_CORRECTION_MAX_BYTES = 4 * 1024
CALL_FILES_MAX_BYTES = 8 * 1024
# Its turns' MCP tool calls (issue 28), newest kept; each holds at most
# MCP_CALL_RECORD_INLINE_MAX_BYTES of arguments and result.
CALL_MCP_CALLS_MAX_BYTES = 8 * 1024
# Everything else on the record: ids, names, counters, the task token (AWS: ≤ 1,024 chars).
CALL_FIXED_FIELDS_MAX_BYTES = 6 * 1024

# ---- Crews and structured functions (SPEC §4, the communication-protocols limits) ----

RUNNING_PER_CREW = 3  # F5: full → busy without queueing
CALL_SUBMISSION_BINDING_SECONDS = 7 * DAY_SECONDS  # F4
RESULT_INLINE_MAX_BYTES = 256 * 1024  # F6: larger results go to a file
RESULT_VALIDATION_MAX_BYTES = 16 * 1024 * 1024  # F6
FILE_PAGE_MAX_BYTES = 2 * 1024 * 1024  # F2 read
CORRECTION_TURNS = 1  # F6
MAX_TURNS = 8  # turns of one call before it fails (questions and corrections included)
FUNCTIONS_PER_CREW = 50
CREWS_PER_ACCOUNT = 100
INSTRUCTIONS_MAX_CHARS = 20_000
ARGS_MAX_BYTES = 256 * 1024
CALL_OUTPUT_RETENTION_DAYS = 7  # F8: matches the bucket lifecycle rule

# M9: a wakeup is due 60 s to 7 days from when it is (re)scheduled.
WAKEUP_MIN_SECONDS = 60
WAKEUP_MAX_SECONDS = 7 * DAY_SECONDS
# A wakeup the tick claimed (`firing`) but never recorded as fired within this long was
# interrupted (the tick stopped): it is recorded `interrupted`, never fired again.
WAKEUP_FIRING_STALE_SECONDS = 300
WAKEUPS_SHOWN_PER_INBOX = 20  # M8 state
# M8: a Crew's state is paged by conversation.
STATE_PAGE_DEFAULT = 10
STATE_PAGE_MAX = 20
# Delivery records of messages to a Crew live as long as the messages (M11).
DELIVERY_RECORD_SECONDS = MESSAGE_RETENTION_SECONDS

# ---- Agent conversations (SPEC §7, C1) ----
# A request's deadline: 24 h unless the asker sets one, at most 7 days. At least a minute,
# because the scheduler tick that expires requests runs once a minute.
REQUEST_DEADLINE_DEFAULT_SECONDS = 24 * 3600
REQUEST_DEADLINE_MIN_SECONDS = 60
REQUEST_DEADLINE_MAX_SECONDS = 7 * 24 * 3600
# Requests the tick expires per run (the rest wait for the next minute).
REQUEST_EXPIRIES_PER_TICK = 100
# Requests shown for one conversation.
REQUESTS_SHOWN_PER_CONVERSATION = 50
# C5 the Inbox (GET /v1/conversations): a page of conversations, from at most this many of
# the newest conversations of each Crew (newest first across them), and per conversation
# the messages a conversation view shows (the newest, both directions).
CONVERSATIONS_PAGE_DEFAULT = 25
CONVERSATIONS_PAGE_MAX = 100
CONVERSATIONS_SCANNED_PER_CREW = 100
CONVERSATION_MESSAGES_SHOWN = 100
# C5 the Messages view: conversations with a named agent, a page at most this many (default 25).
NAMED_CONVERSATIONS_PAGE_DEFAULT = 25
NAMED_CONVERSATIONS_PAGE_MAX = 100
# The first line of a conversation's newest message, as the Inbox's list shows it.
MESSAGE_PREVIEW_MAX_CHARS = 140
# C5 sign-in: a one-time link lives 5 minutes, the session cookie it gives an hour.
WEB_LINK_SECONDS = 5 * 60
WEB_SESSION_SECONDS = 60 * 60
# A web session's push ticket (identity.push_tickets): long enough to open a socket right
# after asking, short enough that one left in a log is worthless a minute later.
PUSH_TICKET_SECONDS = 60
# C3: requests Crews' runs sent whose runs the tick starts per run.
ASKED_STARTS_PER_TICK = 100
# C5 the Runs page: an account's function calls are listed this long after they were made,
# a page at most this many (default 20), from the newest this many entries looked at.
CALLS_LISTED_SECONDS = 30 * DAY_SECONDS
CALLS_PAGE_DEFAULT = 20
CALLS_PAGE_MAX = 100
CALLS_LIST_SCAN = 200
# C3: how often one run may ask back in its own conversation (then its question is its
# answer): a loop of questions ends.
ASK_BACKS_PER_RUN = 5
# C4: a run working in a conversation may open another, up to this many deep.
CONVERSATION_DEPTH_MAX = 3
# Notes a Crew's run reads with the request that follows them (C1).
NOTES_SHOWN_WITH_A_REQUEST = 20

# ---- Workflows (SPEC §6) ----

WORKFLOW_STAGES_MAX = 20  # W1
WORKFLOW_STEPS_PER_STAGE_MAX = 20  # W1: a stage's steps run in parallel
WORKFLOW_STEPS_MAX = 100  # over all stages
WORKFLOW_LABEL_MAX_CHARS = 64  # workflowId, stage and step labels
WORKFLOW_PROMPT_MAX_CHARS = 20_000  # as a message body (M1)
WORKFLOW_VARIABLES_MAX = 50  # `input` entries and `requiredVariables`
WORKFLOW_VARIABLE_MAX_CHARS = 20_000  # one variable's value, as text
WORKFLOW_DEFINITION_MAX_BYTES = 256 * 1024  # the whole workflow_start JSON, as sent
# A refused definition lists at most this many problems (a 400 stays small).
WORKFLOW_PROBLEMS_LISTED = 100
WORKFLOW_COST_MAX_USD = 10_000.0  # W8: maxTotalCostUsd's upper bound
# A step item above this keeps its session turns and output in S3 (DynamoDB: 400 KB).
WORKFLOW_STEP_ITEM_MAX_BYTES = 350_000
WORKFLOW_STEP_TURNS_MAX = 8  # adapter turns of one step (answers and corrections included)
# W3 escalate: how long a step waits for `resolve` (the Await state's TimeoutSeconds).
WORKFLOW_ESCALATION_TIMEOUT_SECONDS = DAY_SECONDS
# A crew step waits on a task token for its call's end (AwaitCall). A call ends within its
# turns, each waiting at most 8 days for an answer (function_call.asl.json's AwaitCrew):
# the state's TimeoutSeconds is a backstop past that.
WORKFLOW_CALL_WAIT_TIMEOUT_SECONDS = MAX_TURNS * 8 * DAY_SECONDS + DAY_SECONDS
# A crew step whose Crew runs all the calls it may (nothing is queued) asks again after a
# wait that doubles from the first to the longest, at most this many times, then fails.
WORKFLOW_CREW_BUSY_FIRST_WAIT_SECONDS = 30
WORKFLOW_CREW_BUSY_LONGEST_WAIT_SECONDS = 900
WORKFLOW_CREW_BUSY_ROUNDS_MAX = 8
WORKFLOW_ANSWER_MAX_CHARS = 20_000  # a person's `resolve` answer
WORKFLOW_QUESTION_MAX_CHARS = 8_000  # a session's question, as a step keeps it
WORKFLOW_ERROR_MAX_CHARS = 2_000  # a step's error, as it keeps it
WORKFLOW_NOTIFICATIONS_KEPT = 20  # the latest webhook deliveries a run keeps
WORKFLOW_ROUTES_MAX = 10  # W9: routes of one routing or branch step
# W12: items of a pipeline. Each runs in its own child execution (a Distributed Map), so
# an execution's 25,000-event history bounds one item, never the run (tests/…/test_history).
WORKFLOW_ITEMS_MAX = 10_000
WORKFLOW_PIPELINE_STEP_RUNS_MAX = 100_000  # items × steps of one run
# Items running at once (the Distributed Map's MaxConcurrency, in workflow_run.asl.json).
WORKFLOW_ITEMS_CONCURRENCY = 100
WORKFLOW_TRIGGERS_MAX = 10  # W11: triggers of one registered workflow
WORKFLOW_CALLERS_MAX = 50  # W10: a workflow function's caller allow-list
SESSION_CALL_WAIT_SECONDS = 120  # a step's session waits this long for a call it made
WORKFLOW_TRIGGER_HISTORY = 20  # firings a trigger's view shows
WORKFLOW_SCHEDULES_PER_TICK = 100  # schedules one tick fires at most
SCHEDULER_EARLY_MS = 60_000  # EventBridge Scheduler may invoke up to this early
# A schedule's invocation the Scheduler could not deliver: retries, then the dead-letter
# queue (the one-minute tick fires a missed schedule anyway).
SCHEDULE_RETRY_ATTEMPTS = 3
SCHEDULE_EVENT_MAX_AGE_SECONDS = 600
WEBHOOK_SIGNATURE_MAX_AGE_SECONDS = 300  # a signed webhook's `t` may be this old (replays)
# …and this far ahead of our clock (skew): a `t` from the future would stretch the window.
WEBHOOK_SIGNATURE_MAX_AHEAD_SECONDS = 60
# A GitHub-signed body carries no time: its delivery is remembered this long (GitHub
# redelivers a delivery of the past 3 days); a replay within it starts nothing new.
WEBHOOK_GITHUB_DELIVERY_SECONDS = 3 * DAY_SECONDS
WORKFLOW_CACHE_SECONDS = 30 * DAY_SECONDS  # W6: a resume-cache entry's lifetime
WORKFLOW_RUNS_LISTED = 50  # `workflow list`: the latest runs
# W3 webhooks to notifyUrl: attempts, the first pause (doubling), one attempt's timeout.
WEBHOOK_ATTEMPTS = 3
WEBHOOK_BACKOFF_SECONDS = 0.5
WEBHOOK_TIMEOUT_SECONDS = 5.0
# Outbound URLs (agentworks.outbound): of the checked addresses a host resolves to, the
# connection tries at most this many in turn (each with the attempt's timeout).
OUTBOUND_ADDRESSES_TRIED = 2

# Adapter profiles (issue 8): a named adapter block a workflow step names with `adapter`.
ADAPTER_PROFILES_PER_ACCOUNT = 100
ADAPTER_PROFILE_MAX_BYTES = 64 * 1024  # the profile as stored JSON

# ---- Relays (SPEC §5) ----

RELAY_FUNCTIONS_MAX = 50  # functions (entrypoints) of one Relay
RELAY_FILES_MAX = 200  # source files of one release
# A release's source, all files together: it travels inline in one publish request
# (REQUEST_BODY_MAX_BYTES, with JSON's escapes) and to the code function in one invocation.
RELAY_SOURCE_MAX_BYTES = 192 * 1024
RELAY_INPUT_MAX_BYTES = 64 * 1024  # a run's input, as compact JSON
RELAY_RESULT_MAX_BYTES = 256 * 1024  # a run's final JSON
RELAY_STEP_RESULT_MAX_BYTES = 64 * 1024  # a durable step's checkpointed result
RELAY_STEPS_MAX = 200  # durable steps of one run
RELAY_STEP_NAME_MAX_CHARS = 100
RELAY_IDEMPOTENCY_KEY_MAX_CHARS = 128
# Attempts of one execution (ASL Retry re-runs a failed attempt; checkpoints carry over).
RELAY_ATTEMPTS_MAX = 3
RELAY_RELEASES_LISTED = 100  # `relays releases`: the latest releases
RELAY_RUN_TIMEOUT_SECONDS = 840  # under the code function's 900 s Lambda limit

# ---- Push delivery (issue 10) ----

# API Gateway closes a WebSocket after 2 hours; a listener's items outlive it by a margin
# (TTL lag is handled by reading `expires_ttl`, never by the item's presence).
PUSH_CONNECTION_SECONDS = 2 * 60 * 60
PUSH_LISTENER_TTL_MARGIN_SECONDS = 10 * 60
# Live listeners of one subject (a name, or an inbox): bounds a notice's fan-out.
PUSH_LISTENERS_PER_SUBJECT = 20
# C5 the console: one notice per account and stream batch names at most this many of the
# runs that changed (more: `more` is true and a page re-reads whatever it shows).
RUN_NOTICE_IDS_MAX = 25
# The notifier remembers which account this many runs belong to (a step's item does not
# name it): one read per run and process, not one per change.
RUN_ACCOUNTS_REMEMBERED = 1000

# ---- Local runners (issue 10 item 6): `cli` adapter steps run by an opted-in bridge ----

# The prompt travels to the CLI as one argument, and Linux bounds one argument at 128 KiB:
# 30,000 characters take at most 120 KB of UTF-8.
RUNNER_PROMPT_MAX_CHARS = 30_000
# What a runner reports: written with JSON's \u escapes (12 bytes for a character outside
# the BMP) a report stays under the 512 KiB request bound, and with the prompt a job item
# stays under DynamoDB's 400 KB.
RUNNER_OUTPUT_MAX_CHARS = 40_000
RUNNER_ERROR_MAX_CHARS = 2_000
# A CLI's session id (Claude's and Codex's are UUIDs); it must fit the sessions route's 64.
RUNNER_SESSION_ID_MAX_CHARS = 64
RUNNER_ID_MAX_CHARS = 64  # a bridge's own runner id
RUNNER_NAME_MAX_CHARS = 64  # the name it shows (its computer's, by default)
RUNNER_COST_MAX_USD = WORKFLOW_COST_MAX_USD  # one session turn's reported cost
# A cli profile's extra CLI arguments (from the allow-list in crews.adapters.cli).
RUNNER_ARGS_MAX = 8
# One session turn's time on the runner: the profile's `timeout_seconds`, within these.
RUNNER_TIMEOUT_MIN_SECONDS = 60
RUNNER_TIMEOUT_DEFAULT_SECONDS = 1_800
RUNNER_TIMEOUT_MAX_SECONDS = 4 * 3600
# A job no runner claims within this fails its step.
RUNNER_QUEUE_WAIT_SECONDS = DAY_SECONDS
# A claim lasts this long unless its runner renews it (the bridge renews every
# RUNNER_RENEW_SECONDS while its CLI runs); an expired claim fails the step: a session that
# may have done part of its work is never started again on its own (retry the run).
RUNNER_LEASE_SECONDS = 120
RUNNER_RENEW_SECONDS = 30
# The AwaitRunner state's TimeoutSeconds: a backstop past every other bound, in case the
# tick that expires jobs is not running.
RUNNER_WAIT_TIMEOUT_SECONDS = RUNNER_QUEUE_WAIT_SECONDS + RUNNER_TIMEOUT_MAX_SECONDS + 3600
RUNNER_CLAIM_SCAN_MAX = 100  # queued jobs one claim looks at (oldest first)
RUNNER_JOBS_PER_TICK = 100  # expired or undelivered jobs one tick settles
RUNNER_JOB_RETENTION_SECONDS = 7 * DAY_SECONDS  # an ended job stays readable this long

# ---- Usage and cost per account (issue 12 item 4) ----

# `GET /v1/usage?days=N` / `agentworks usage --days N`: today and the N-1 days before it.
USAGE_DAYS_DEFAULT = 7
USAGE_DAYS_MAX = 90
# A day's counters outlive the longest window anyone can ask for (then TTL removes them).
USAGE_RETENTION_SECONDS = (USAGE_DAYS_MAX + 2) * DAY_SECONDS
# Each account-day is this many items, so concurrent writers (call ends in transactions,
# read pages, stream batches) rarely meet on one item; a report sums them.
USAGE_SHARDS = 8
# Read pages are tallied in memory and written at most this often per process (no request
# of its own on a read): what a recycled container had not written yet is lost, at most
# this long of its reads (usage is an estimate).
USAGE_FLUSH_SECONDS = 60
# Conversation -> account lookups the stream counter remembers (an account never changes).
USAGE_ACCOUNT_CACHE = 10_000

# ---- Audit log and conversation webhooks (issue 11 item 7, C6) ----

# An audit entry is kept this long (TTL), then removed.
AUDIT_RETENTION_SECONDS = 90 * DAY_SECONDS
AUDIT_DETAIL_MAX_CHARS = 200  # platform-written details only; never a message body
# `GET /v1/audit?limit=N` / `agentworks audit list --limit N`.
AUDIT_PAGE_DEFAULT = 50
AUDIT_PAGE_MAX = 100
# With an inbox_id filter, one read examines at most this many pages of the account's
# entries; a page can come back short with a cursor to go on.
AUDIT_FILTER_PAGES = 5
# Webhook subscriptions per account, and what one may be.
CONVERSATION_WEBHOOKS_MAX = 10
CONVERSATION_WEBHOOK_URL_MAX_CHARS = 2048
# A delivery is tried this many times, the pause doubling from the first (the function
# waits in between: a batch takes at most the sum of the pauses plus the timeouts).
CONVERSATION_WEBHOOK_ATTEMPTS = 4
CONVERSATION_WEBHOOK_BACKOFF_SECONDS = 1.0
CONVERSATION_WEBHOOK_TIMEOUT_SECONDS = 5.0
# A delivery record (each attempt's status, error and time) is kept this long.
CONVERSATION_WEBHOOK_DELIVERY_SECONDS = 7 * DAY_SECONDS
CONVERSATION_WEBHOOK_DELIVERIES_SHOWN = 50
# A `lambda` adapter's function serves the account its `agentworks:account` tag names; a
# container keeps what it read of that tag this long (a re-tag counts within it).
AGENT_FUNCTION_BINDING_CACHE_SECONDS = 60

# ---- Attached MCP servers (issue 28) ----

MCP_SERVERS_PER_ACCOUNT = 50
MCP_SERVER_NAME_MAX_CHARS = 64
MCP_SERVER_URL_MAX_CHARS = 2048
# Headers sent with every request to the server (all kept in its secret, never shown).
MCP_SERVER_HEADERS_MAX = 10
MCP_SERVER_HEADER_VALUE_MAX_CHARS = 4096
# One tool call: the timeout when none is asked for, and the most one may ask (a call is
# also bounded by the time its caller has left, e.g. the API function's 29 s).
MCP_CALL_TIMEOUT_DEFAULT_SECONDS = 60.0
MCP_CALL_TIMEOUT_MAX_SECONDS = 900.0
# A tool call's result (its content's text, data and structured content, in bytes): past
# it the call fails with a clear message instead of reaching the model.
MCP_RESULT_MAX_BYTES = 256 * 1024
# A server's tool list is kept this long per container (show, and admission of calls).
MCP_TOOLS_CACHE_SECONDS = 60
# Listing a server's tools (show, and the check that a called tool exists) waits this long.
MCP_LIST_TIMEOUT_SECONDS = 10.0
# An `mcp_tools` declaration: servers named, tools per server.
MCP_TOOLS_DECLARED_SERVERS_MAX = 20
MCP_TOOLS_DECLARED_TOOLS_MAX = 100
MCP_TOOL_NAME_MAX_CHARS = 128
# Tool calls made by relay code (platform.mcp(NAME).call): each is recorded on its run with
# its arguments and result kept inline up to this size (compact JSON, both together); a
# larger one goes to the outputs bucket, as a large step output does.
RELAY_MCP_CALL_INLINE_MAX_BYTES = 16 * 1024
# The run view shows a run's first tool calls (the count says how many there were).
RELAY_MCP_CALLS_SHOWN = 100
# An in-flight call re-reads its run this often; a run that ended (or moved to another
# attempt) meanwhile cancels the call.
RELAY_MCP_RUN_WATCH_SECONDS = 1.0
# A hosted agent's MCP tool calls (issue 28 items 3-5): at most this many in one turn, and
# a call's arguments and result up to this size sit in the turn's record (larger ones are
# kept in S3 beside the call's or step's outputs; the record names the file).
MCP_CALLS_PER_TURN_MAX = 25
MCP_CALL_RECORD_INLINE_MAX_BYTES = 2048
# A `lambda` adapter's call token lasts the turn's remaining time, at most this long.
MCP_CALL_TOKEN_MAX_SECONDS = 900.0
# While a tool call is in flight, whether its run was cancelled is read this often (one
# read each time); a cancel ends the call within it.
MCP_CANCEL_POLL_SECONDS = 2.0
# MCP tasks (issue 30 §3): the poll interval a task suggests (pollIntervalMs; the tool
# description's "every few seconds"), and the longest taskId looked up (a call id is 31
# characters; a longer one is refused before any read, as a path id is on HTTP).
MCP_TASK_POLL_INTERVAL_MS = 2_000
MCP_TASK_ID_MAX_CHARS = 64

# -- A2A (issue 30) -------------------------------------------------------------------------
# A SendMessage without returnImmediately waits at most this long for its task to end or
# ask (API Gateway answers within 30 s); then it answers with the task as it stands.
A2A_SEND_WAIT_SECONDS = 20.0
# ListTasks without a pageSize (the A2A default); at most CALLS_PAGE_MAX.
A2A_TASKS_PAGE_DEFAULT = 50
# The a2a adapter (§2): the external agent's task may take timeout_seconds in all (then it is
# cancelled at the agent). A turn follows it for A2A_TURN_FOLLOW_SECONDS, re-reading it after
# 0.5 s, the pause doubling to 5 s; a task still working then is followed by the tick while
# the call or step waits on a task token (no invocation, no transition): first after
# A2A_WAIT_POLL_FIRST_SECONDS, the pause doubling to A2A_WAIT_POLL_MAX_SECONDS. Each request
# to the agent may take A2A_REQUEST_TIMEOUT_SECONDS.
A2A_TURN_TIMEOUT_DEFAULT_SECONDS = 600
A2A_TURN_TIMEOUT_MAX_SECONDS = 7 * DAY_SECONDS
A2A_TURN_FOLLOW_SECONDS = 5.0
A2A_POLL_FIRST_SECONDS = 0.5
A2A_POLL_MAX_SECONDS = 5.0
A2A_WAIT_POLL_FIRST_SECONDS = 15
A2A_WAIT_POLL_MAX_SECONDS = 600
A2A_WAITS_PER_TICK = 50  # external tasks one tick reads (its card and the task)
# The tick's reads of a task wait this long per request, and stop while the tick has
# less than A2A_TICK_RESERVE_SECONDS left (its Lambda timeout is 50 s).
A2A_TICK_REQUEST_TIMEOUT_SECONDS = 5.0
A2A_TICK_RESERVE_SECONDS = 15.0
A2A_REQUEST_TIMEOUT_SECONDS = 30.0
# Push notification configs (§1): at most this many per task, each URL this long, its
# token and credentials this long; a state change is POSTed to each at most this many
# times, the pause doubling, each request this long; a notifier batch stops sending once it
# ran this long (its timeout is 30 s; what is left is logged, never retried).
A2A_PUSH_CONFIGS_PER_TASK = 5
A2A_PUSH_CONFIG_ID_MAX_CHARS = 64
A2A_PUSH_URL_MAX_CHARS = 2048
A2A_PUSH_SECRET_MAX_CHARS = 1024
A2A_PUSH_ATTEMPTS = 2
A2A_PUSH_BACKOFF_SECONDS = 0.5
A2A_PUSH_TIMEOUT_SECONDS = 3.0
A2A_PUSH_BATCH_SECONDS = 20.0
