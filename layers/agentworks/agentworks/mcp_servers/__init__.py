"""Attached MCP servers (issue 28): an account's named connections to outside MCP servers,
whose tools Crews, adapter profiles and Relays may be admitted to call.

- `models`: what a server's definition may be (name, URL, headers), validated.
- `declarations`: the `mcp_tools` declaration and `admit`, the one admission rule.
- `server_store`: the servers' items in the work table; `secret_store`: their headers, one
  Secrets Manager secret per server (never returned by a read, never logged).
- `client`: the official MCP client over streamable HTTP, with the outbound rules checked
  at connect time, no redirects, a timeout and a result size bound.
- `service`: add, list, show, update, remove and call, as a principal may.
"""
