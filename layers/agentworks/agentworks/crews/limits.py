"""Bounds of Crews and structured functions (SPEC §4, the communication-protocols limits)."""

from __future__ import annotations

RUNNING_PER_CREW = 3  # F5: full → busy without queueing
SUBMISSION_BINDING_SECONDS = 7 * 24 * 3600  # F4
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
WAKEUP_MAX_SECONDS = 7 * 24 * 3600
# A wakeup the tick claimed (`firing`) but never recorded as fired within this long was
# interrupted (the tick stopped): it is recorded `interrupted`, never fired again.
WAKEUP_FIRING_STALE_SECONDS = 300
WAKEUPS_SHOWN_PER_INBOX = 20  # M8 state
# M8: a Crew's state is paged by conversation.
STATE_PAGE_DEFAULT = 10
STATE_PAGE_MAX = 20
# Delivery records of messages to a Crew live as long as the messages (M11).
DELIVERY_RECORD_SECONDS = 7 * 24 * 3600
