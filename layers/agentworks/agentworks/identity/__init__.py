"""Accounts, connections and the principal a request acts as (SPEC §2, A1–A6)."""
