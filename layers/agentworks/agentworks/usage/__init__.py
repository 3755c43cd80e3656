"""Usage and cost per account (issue 12): per-account, per-day counters the platform keeps
without a request of their own on the send path, and their estimated cost.

Where each counter is written (docs/usage.md says why):
- messages sent, stored bytes, push notices: the notifier, from the messages table's stream;
- messages read: one `ADD` per read page that returned messages (a read writes nothing else);
- function calls, state transitions: inside the transaction that records a Crew run's end;
- push minutes: when a listener's WebSocket closes (or the notifier drops it).
"""
