"""Outbound webhooks for conversation events (C6): subscriptions, and their delivery from
the audit log's stream."""
