"""Conversations with Crews (SPEC §7, C1–C7): requests, replies and notes, the eight states,
stepping in, deadlines, conversation controls, the Inbox, and wakeups (M9)."""
