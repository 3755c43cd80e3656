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

# A2: connections.
CONNECTION_NAME_MAX_CHARS = 64
CONNECTIONS_PER_ACCOUNT = 200

# HTTP: a 20,000-emoji body escaped as JSON (\\uXXXX pairs) is ~240 KB; allow headroom.
REQUEST_BODY_MAX_BYTES = 512 * 1024
