"""Push delivery (SPEC §9, issue 10): listeners on a WebSocket learn that an inbox has new
messages, then read them through the normal API (authorization stays in one place)."""
