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
