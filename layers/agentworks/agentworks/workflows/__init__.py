"""Workflows (SPEC §6): staged runs of agent sessions."""
