"""The local bridge (issue 10): one process per computer that listens on the push channel
for each attached coding-agent session and hands its messages to the session's hooks."""
