"""The JSON REST API under /v1 (powertools event handler, OpenAPI generated)."""
