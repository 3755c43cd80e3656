"""The MCP endpoint (`/mcp`): stateless streamable HTTP with JSON responses (SPEC §10).

`server.build()` holds the tools; `lambda_adapter.handle_event` serves one API Gateway
HTTP API v2 event. Tools act as the principal its bearer token resolved to, passed
through a context variable (`principal.acting_as`), never a global.
"""
