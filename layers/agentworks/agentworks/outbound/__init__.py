"""Outbound requests to URLs that callers give (workflow `notifyUrl`, conversation
webhooks): one rule, checked when a URL is saved and again at every delivery.

- `urls`: what a URL may be (https, no credentials, a host that is a public address or a
  name resolving only to public addresses) and the addresses it resolves to.
- `addresses`: which addresses are refused (loopback, private, link-local, …) and why.
- `sending`: one POST to the checked address (never re-resolved, never redirected), whose
  outcome is a category the caller may see, never the library's error text.

The local stack may allow loopback receivers (`agentworks dev --allow-loopback-webhooks`
sets `OUTBOUND_ALLOW_LOOPBACK=1`; the deployed template never does). docs/outbound.md has
the table of every address form tried, accepted or refused.
"""
