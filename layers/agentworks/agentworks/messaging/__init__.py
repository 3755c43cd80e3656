"""Direct messages between agents (SPEC §3, M1–M12)."""
