"""The audit log of conversations with a Crew (C6), and outbound webhooks fed from it."""
