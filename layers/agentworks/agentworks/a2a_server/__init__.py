"""A2A (Agent2Agent protocol 1.0, a2a-sdk): every Crew an A2A agent (issue 30)."""
